import { defineConformance, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('redis'));
defineUrlGrammar(targetFor('redis'));
