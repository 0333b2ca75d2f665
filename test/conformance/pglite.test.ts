import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';
import { defineHistory } from './history.ts';

defineConformance(targetFor('pglite'));
defineUrlGrammar(targetFor('pglite'));
defineCount(targetFor('pglite'));
defineHistory(targetFor('pglite'));
