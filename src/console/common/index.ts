/**
 * Browser-safe console code: the one folder the renderer imports from (no Node, no backend).
 * The request/event contract, the fleet view API, status rules, text and export helpers.
 */
export * from '../api.ts';
export * from '../export.ts';
export * from '../format.ts';
export * from '../groups.ts';
export * from '../status.ts';
export * from '../text.ts';
export * from './view.ts';
