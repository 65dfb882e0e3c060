import { describe, expect, it } from 'vitest';
import {
  blockCount,
  failedLine,
  FIREWALL_RULES,
  firewallScript,
  formatSubnet,
  freeIndex,
  hasCapability,
  hostScript,
  interfaceIndex,
  missingRules,
  namespaceInode,
  parseSubnet,
  podIndexOf,
  podKey,
  podLink,
  podScript,
  removeScript,
  undoScript,
  type Subnet,
} from './pod-network.js';

const range = parseSubnet('10.213.0.0/16') as Subnet;

describe('parseSubnet', () => {
  it('reads an IPv4 range in CIDR form', () => {
    expect(range).toEqual({ base: 0x0ad50000, prefix: 16 });
    expect(formatSubnet(range)).toBe('10.213.0.0/16');
    expect(formatSubnet(parseSubnet('172.31.255.252/30') as Subnet)).toBe('172.31.255.252/30');
  });

  it('refuses what is not a range pods can take /30s from, saying why', () => {
    expect(parseSubnet('10.213.0.0')).toMatch(/CIDR form/);
    expect(parseSubnet('10.213.1.0/16')).toMatch(/host bits set: the range starts at 10\.213\.0\.0\/16/);
    expect(parseSubnet('10.0.0.0/31')).toMatch(/between a \/8 and a \/30/);
    expect(parseSubnet('10.0.0.0/4')).toMatch(/between a \/8 and a \/30/);
    expect(parseSubnet('300.0.0.0/16')).toMatch(/not an IPv4 address range/);
    for (const r of ['127.0.0.0/8', '0.0.0.0/8', '169.254.0.0/16', '224.0.0.0/8']) expect(parseSubnet(r)).toMatch(/not a range for hosts/);
  });
});

describe('blocks', () => {
  it('gives block i the /30 at 4i: the host side first, the pod side second', () => {
    expect(blockCount(range)).toBe(16384);
    expect(podLink(range, '3f2a9c01d7', 0)).toEqual({
      index: 0,
      namespace: 'infergate-3f2a9c01d7-0',
      hostInterface: 'igr0',
      hostAddress: '10.213.0.1',
      podAddress: '10.213.0.2',
    });
    expect(podLink(range, 's', 64)).toMatchObject({ hostAddress: '10.213.1.1', podAddress: '10.213.1.2', hostInterface: 'igr64' });
    expect(podLink(range, 's', 16383)).toMatchObject({ hostAddress: '10.213.255.253', podAddress: '10.213.255.254' });
    expect(() => podLink(range, 's', 16384)).toThrow(/outside 10\.213\.0\.0\/16/);
    // The longest name the kernel must accept (15 characters at most) is a /8's last block.
    expect(podLink(parseSubnet('10.0.0.0/8') as Subnet, 's', 4194303).hostInterface).toBe('igr4194303');
  });

  it('takes the smallest index nobody holds, and none when the range is full', () => {
    expect(freeIndex(range, new Set())).toBe(0);
    expect(freeIndex(range, new Set([0, 1, 3]))).toBe(2);
    const one = parseSubnet('10.9.9.8/30') as Subnet;
    expect(freeIndex(one, new Set([0]))).toBeNull();
  });

  it("reads block indexes back from the host's interface names and this scope's namespaces only", () => {
    expect(interfaceIndex('igr12')).toBe(12);
    expect(interfaceIndex('igr12p')).toBeNull();
    expect(interfaceIndex('eth0')).toBeNull();
    expect(podIndexOf('3f2a9c01d7', 'infergate-3f2a9c01d7-5')).toBe(5);
    expect(podIndexOf('3f2a9c01d7', 'infergate-0000000000-5')).toBeNull();
    expect(podIndexOf('3f2a9c01d7', 'infergate-3f2a9c01d7')).toBeNull();
  });
});

describe('podKey', () => {
  it('a general replica is a pod of its own; an orchestrated deployment, every component and revision, shares one', () => {
    expect(podKey({ name: 'web-r1-3', component: 'Replica', deploymentId: 4 })).toBe('replica:web-r1-3');
    const shared = ['Frontend', 'Worker', 'Prefill', 'Decode'].map((component, i) => podKey({ name: `agg-r${i}-x`, component, deploymentId: 9 }));
    expect(new Set(shared)).toEqual(new Set(['deployment:9']));
  });
});

describe('the ip batch scripts', () => {
  const link = podLink(range, '3f2a9c01d7', 5);

  it("host side: takes the index first (igr5, or File exists before anything is made), then the namespace, the peer into it, the host's address, up", () => {
    expect(hostScript(link, true).split('\n')).toEqual([
      'link add igr5 type veth peer name igr5p',
      'netns add infergate-3f2a9c01d7-5',
      'link set igr5p netns infergate-3f2a9c01d7-5',
      'link set igr5 addrgenmode none',
      'addr add 10.213.0.21/30 dev igr5',
      'link set igr5 up',
      '',
    ]);
    expect(hostScript(link, false)).not.toContain('addrgenmode');
  });

  it('pod side: loopback up, the peer renamed eth0 with its address, and no route beyond the link', () => {
    expect(podScript(link, true).split('\n')).toEqual([
      'link set lo up',
      'link set igr5p name eth0',
      'link set eth0 addrgenmode none',
      'addr add 10.213.0.22/30 dev eth0',
      'link set eth0 up',
      '',
    ]);
    expect(podScript(link, true)).not.toMatch(/route|default|via/);
  });

  it('undo and removal name the namespace (its veth goes with it)', () => {
    expect(undoScript(link)).toBe('netns del infergate-3f2a9c01d7-5\nlink del igr5\n');
    expect(removeScript(['infergate-a-1', 'infergate-a-2'])).toBe('netns del infergate-a-1\nnetns del infergate-a-2\n');
    expect(failedLine('RTNETLINK answers: File exists\nCommand failed -:1')).toBe(1);
    expect(failedLine('Cannot create namespace file "/var/run/netns/x": File exists\nCommand failed -:2')).toBe(2);
    expect(failedLine('')).toBeNull();
  });
});

describe('the firewall', () => {
  it("drops new connections from pods' links to this host and anything forwarded to or from them, each rule added once", () => {
    expect(FIREWALL_RULES.map((r) => r.join(' '))).toEqual([
      'INPUT -i igr+ -m conntrack --ctstate NEW -j DROP',
      'FORWARD -i igr+ -j DROP',
      'FORWARD -o igr+ -j DROP',
    ]);
    const script = firewallScript(FIREWALL_RULES);
    expect(script).toContain('"$1" -w -C INPUT -i igr+ -m conntrack --ctstate NEW -j DROP 2>/dev/null || "$1" -w -I INPUT 1 -i igr+ -m conntrack --ctstate NEW -j DROP || status=1');
    expect(script.split('\n')).toHaveLength(FIREWALL_RULES.length + 2);
  });

  it('reads which rules a host already has from iptables-save, so a start that finds them all runs no insert', () => {
    const saved = [
      '*filter',
      ':INPUT ACCEPT [0:0]',
      '-A INPUT -i igr+ -m conntrack --ctstate NEW -j DROP',
      '-A FORWARD -o igr+ -j DROP',
      '-A FORWARD -j DOCKER-USER',
      'COMMIT',
    ].join('\n');
    expect(missingRules(saved)).toEqual([['FORWARD', '-i', 'igr+', '-j', 'DROP']]);
    expect(missingRules(`${saved}\n-A FORWARD -i igr+ -j DROP\n`)).toEqual([]);
    expect(missingRules('')).toEqual(FIREWALL_RULES);
  });
});

describe('from /proc', () => {
  it('reads namespace inodes and effective capabilities', () => {
    expect(namespaceInode('net:[4026532281]')).toBe(4026532281);
    expect(namespaceInode('pid:[1]')).toBeNull();
    const root = 'Name:\tnode\nCapEff:\t000001ffffffffff\n';
    expect(hasCapability(root, 12)).toBe(true);
    expect(hasCapability(root, 21)).toBe(true);
    const docker = 'CapEff:\t00000000a80425fb\n'; // Docker's default set: no NET_ADMIN, no SYS_ADMIN
    expect(hasCapability(docker, 12)).toBe(false);
    expect(hasCapability(docker, 21)).toBe(false);
    expect(hasCapability('', 12)).toBe(false);
  });
});
