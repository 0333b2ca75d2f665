import { definePoolerTier } from './tier.ts';

await definePoolerTier('transaction');
