import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('postgres'));
defineUrlGrammar(targetFor('postgres'));
defineCount(targetFor('postgres'));
