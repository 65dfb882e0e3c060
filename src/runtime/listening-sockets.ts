// Owns finding which TCP addresses a replica listens on, from /proc: the socket inodes its
// processes hold (/proc/<pid>/fd) matched against the listening sockets of the network
// namespace each process is in (/proc/<pid>/net/tcp and tcp6: the host's for a replica on the
// host's network, its pod's otherwise). On the host's network the local runtime cannot force a
// host command's bind address, so it checks what the replica actually opened and reports any
// address beyond loopback: such a replica answers anyone who can reach this host, with no
// token, no client certificate and no rate limit. Many replicas are checked at once
// (listeningAddressesOf): each namespace's socket table is read once for all of them.

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface ListeningAddress {
  address: string;
  port: number;
}

const TCP_LISTEN = '0A';

/** `0100007F` → 127.0.0.1: /proc/net/tcp writes the address as one 32-bit word in host (little-endian) order. */
function ipv4(hex: string): string {
  const word = Number.parseInt(hex, 16);
  return [word & 0xff, (word >>> 8) & 0xff, (word >>> 16) & 0xff, word >>> 24].join('.');
}

/** tcp6 writes four 32-bit words, each in host order. */
function ipv6(hex: string): string {
  const bytes: number[] = [];
  for (let w = 0; w < 4; w++) {
    const word = Number.parseInt(hex.slice(w * 8, w * 8 + 8), 16);
    bytes.push(word & 0xff, (word >>> 8) & 0xff, (word >>> 16) & 0xff, word >>> 24);
  }
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  const mapped = groups.slice(0, 5).every((g) => g === '0') && groups[5] === 'ffff';
  if (mapped) return `::ffff:${bytes.slice(12).join('.')}`;
  return compress(groups);
}

/** RFC 5952: the longest run of two or more zero groups becomes `::`. */
function compress(groups: string[]): string {
  let best = { at: -1, length: 1 };
  for (let i = 0; i < groups.length; ) {
    let j = i;
    while (j < groups.length && groups[j] === '0') j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.at === -1) return groups.join(':');
  return `${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.length).join(':')}`;
}

/** The listening sockets in one /proc/net/tcp{,6} table: inode → address. */
export function parseListening(table: string, family: 4 | 6): Map<string, ListeningAddress> {
  const out = new Map<string, ListeningAddress>();
  for (const line of table.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10 || fields[3] !== TCP_LISTEN) continue;
    const [addr, port] = (fields[1] ?? '').split(':');
    if (addr === undefined || port === undefined) continue;
    out.set(fields[9] as string, { address: family === 4 ? ipv4(addr) : ipv6(addr), port: Number.parseInt(port, 16) });
  }
  return out;
}

export function isLoopback(address: string): boolean {
  return address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.');
}

function read(file: string): string {
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return '';
  }
}

/** The inodes of the sockets process `pid` holds; none when it is gone. */
export function socketInodes(pid: number): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const inodes: string[] = [];
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.push(m[1] as string);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** Every TCP address the processes `pids` listen on (each once), in whichever network namespace each is. */
export function listeningAddresses(pids: readonly number[]): ListeningAddress[] {
  return listeningAddressesOf(new Map([[0, pids]])).get(0) ?? [];
}

/**
 * For each group of processes (a replica's), every TCP address they listen on: the sockets each
 * process holds, matched against the listening sockets of its network namespace — each
 * namespace's table read once for every group in it (replicas on the host's network share one),
 * so checking every replica costs one table read, not one per replica.
 */
export function listeningAddressesOf<K>(groups: ReadonlyMap<K, readonly number[]>): Map<K, ListeningAddress[]> {
  const inodesOf = new Map<K, Set<string>>();
  // One table per namespace, read through a process that is in it.
  const tables = new Map<string, number>();
  for (const [key, pids] of groups) {
    const inodes = new Set<string>();
    inodesOf.set(key, inodes);
    for (const pid of pids) {
      try {
        const ns = readlinkSync(`/proc/${pid}/ns/net`);
        if (!tables.has(ns)) tables.set(ns, pid);
      } catch {
        continue; // gone
      }
      for (const inode of socketInodes(pid)) inodes.add(inode);
    }
  }
  const listening = new Map<string, ListeningAddress>();
  for (const pid of tables.values()) {
    for (const [inode, address] of [...parseListening(read(`/proc/${pid}/net/tcp`), 4), ...parseListening(read(`/proc/${pid}/net/tcp6`), 6)]) listening.set(inode, address);
  }
  const out = new Map<K, ListeningAddress[]>();
  for (const [key, inodes] of inodesOf) {
    const found: ListeningAddress[] = [];
    for (const inode of inodes) {
      const address = listening.get(inode);
      if (address) found.push(address);
    }
    out.set(key, found.sort((a, b) => a.port - b.port || a.address.localeCompare(b.address)));
  }
  return out;
}

/** The addresses among these that anyone beyond this host could reach. */
export function beyondLoopback(addresses: readonly ListeningAddress[]): ListeningAddress[] {
  return addresses.filter((a) => !isLoopback(a.address));
}

export const formatAddress = (a: ListeningAddress): string => (a.address.includes(':') ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`);
