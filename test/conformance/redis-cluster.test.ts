import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';

defineConformance(targetFor('redis-cluster'));
defineUrlGrammar(targetFor('redis-cluster'));
defineCount(targetFor('redis-cluster'));
