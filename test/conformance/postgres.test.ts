import { defineConformance, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('postgres'));
defineUrlGrammar(targetFor('postgres'));
