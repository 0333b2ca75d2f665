import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('pglite'));
defineUrlGrammar(targetFor('pglite'));
defineCount(targetFor('pglite'));
