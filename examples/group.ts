/**
 * Fleet balancing: three consumers share twelve partitions. Each holds four;
 * when one leaves, the other two take its partitions over from their last
 * checkpoints and hold six each.
 *
 * Run: npx tsx examples/group.ts [backend url]   (default pglite://memory)
 */
import { pathToFileURL } from 'node:url';
import { type GroupMember, joinGroup, type LeaseHolder, openBackend } from 'worklease';

const partitions = Array.from({ length: 12 }, (_, i) => `orders-p${i}`);

export async function main(url = process.argv[2] ?? 'pglite://memory') {
  const backend = await openBackend(url);
  const join = (holderId: string) =>
    joinGroup(backend, {
      group: 'order-consumers',
      holderId,
      workIds: partitions,
      ttlMs: 3000,
      rebalanceMs: 200,
      async onAssigned(holder: LeaseHolder) {
        const offset = holder.state === null ? 0 : Number(new TextDecoder().decode(holder.state));
        // Consume from `offset`; here: record that this consumer got as far as offset + 10.
        await holder.save(new TextEncoder().encode(String(offset + 10)));
      },
      onRevoked(workId, reason) {
        console.log(`${holderId} gives up ${workId} (${reason})`);
      },
    });
  const settle = async (members: GroupMember[], each: number) => {
    for (let i = 0; i < 100 && !members.every((m) => m.held.length === each); i++) {
      await Promise.all(members.map((m) => m.rebalance()));
      await new Promise((r) => setTimeout(r, 100));
    }
    return members.map((m) => m.held.length);
  };
  try {
    const members = [await join('consumer-1'), await join('consumer-2'), await join('consumer-3')];
    const three = await settle(members, 4);
    console.log(`three consumers hold ${three.join(', ')} partitions`);
    await members[2]!.leave();
    const two = await settle(members.slice(0, 2), 6);
    console.log(`after one left, two consumers hold ${two.join(', ')} partitions`);
    await Promise.all(members.slice(0, 2).map((m) => m.leave()));
    return { three, two };
  } finally {
    await backend.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
