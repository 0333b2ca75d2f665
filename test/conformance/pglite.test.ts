import { defineConformance, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('pglite'));
defineUrlGrammar(targetFor('pglite'));
