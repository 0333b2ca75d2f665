import { defineConformance, defineCount, defineUrlGrammar, targetFor } from './contract.ts';
import { defineHistory } from './history.ts';

defineConformance(targetFor('redis'));
defineUrlGrammar(targetFor('redis'));
defineCount(targetFor('redis'));
defineHistory(targetFor('redis'));
