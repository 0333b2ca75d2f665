import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';
import { defineHistory } from './history.ts';

defineConformance(targetFor('redis-cluster'));
defineUrlGrammar(targetFor('redis-cluster'));
defineCount(targetFor('redis-cluster'));
defineHistory(targetFor('redis-cluster'));
