import { consoleSuite } from './suite.ts';

consoleSuite('redis');
