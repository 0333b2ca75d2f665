import { consoleSuite } from './suite.ts';

consoleSuite('postgres');
