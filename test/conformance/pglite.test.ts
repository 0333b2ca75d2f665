import { defineConformance, targetFor } from './contract.ts';

defineConformance(targetFor('pglite'));
