import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('redis'));
defineUrlGrammar(targetFor('redis'));
defineCount(targetFor('redis'));
