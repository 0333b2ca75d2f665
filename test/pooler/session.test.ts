import { definePoolerTier } from './tier.ts';

await definePoolerTier('session');
