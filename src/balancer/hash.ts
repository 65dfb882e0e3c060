// Owns the string hash of consistent hashing: FNV-1a over UTF-16 code units, then murmur3's
// fmix32 finalizer. FNV-1a alone is fast but its low bits avalanche poorly on similar keys
// ("session-1", "session-2"); fmix32 (Appleby, MurmurHash3) spreads them over the ring.

export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

/** MurmurHash3's finaliser: every input bit moves every output bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Another hash of a key from its hash32: fmix32 again, after a constant. A choice made with it
 * does not line up with the ring position hash32 gives the same key — a session's revision
 * (gateway/traffic-split.ts) and then its replica inside that revision stay independent, so the
 * sessions of a 10 % revision spread over its whole ring rather than one tenth of it.
 */
export function rehash32(h: number): number {
  return fmix32(h ^ 0x9e3779b9);
}
