import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';
import { defineHistory } from './history.ts';

defineConformance(targetFor('postgres'));
defineUrlGrammar(targetFor('postgres'));
defineCount(targetFor('postgres'));
defineHistory(targetFor('postgres'));
