/** The tests' private Redis Cluster: the chaos harness's own (src/chaos/cluster.ts). */
export { type RedisCluster, startRedisCluster } from '../../src/chaos/cluster.ts';
