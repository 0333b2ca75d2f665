import { defineConformance, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('redis-cluster'));
defineUrlGrammar(targetFor('redis-cluster'));
