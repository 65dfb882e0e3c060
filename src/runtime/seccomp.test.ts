import { describe, expect, it } from 'vitest';
import { abisFor, encodeFilter, hostUserNamespaceFilter, userNamespaceFilter, type BpfInstruction } from './seccomp.js';

/** A classic-BPF interpreter for the opcodes seccomp filters use here, run over one struct seccomp_data. */
function run(program: readonly BpfInstruction[], call: { arch: number; nr: number; arg0?: number }): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr, 0);
  data.writeUInt32LE(call.arch, 4);
  data.writeUInt32LE((call.arg0 ?? 0) >>> 0, 16);
  let a = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const { code, jt, jf, k } = program[pc]!;
    if (code === 0x20) a = data.readUInt32LE(k);
    else if (code === 0x06) return k;
    else if (code === 0x15) pc += a === k ? jt : jf;
    else if (code === 0x35) pc += a >= k ? jt : jf;
    else if (code === 0x45) pc += (a & k) !== 0 ? jt : jf;
    else throw new Error(`opcode ${code} not modelled`);
  }
  throw new Error('fell off the end of the program');
}

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const ENOSYS = 0x00050026;
const X86_64 = 0xc000003e;
const I386 = 0x40000003;
const AARCH64 = 0xc00000b7;
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWNS = 0x00020000;
const SIGCHLD = 17;

describe('the user-namespace filter', () => {
  const x64 = userNamespaceFilter(abisFor('x64')!);
  const arm64 = userNamespaceFilter(abisFor('arm64')!);

  it.each([
    ['unshare(CLONE_NEWUSER)', X86_64, 272, CLONE_NEWUSER, EPERM],
    ['unshare(CLONE_NEWUSER|CLONE_NEWNS)', X86_64, 272, CLONE_NEWUSER | CLONE_NEWNS, EPERM],
    ['unshare(CLONE_NEWNS) (the kernel refuses it without a capability)', X86_64, 272, CLONE_NEWNS, ALLOW],
    ['clone(CLONE_NEWUSER)', X86_64, 56, CLONE_NEWUSER | SIGCHLD, EPERM],
    ['clone for fork or a thread', X86_64, 56, SIGCHLD, ALLOW],
    ['clone3 (flags unreadable: fall back to clone)', X86_64, 435, 0, ENOSYS],
    ['setns', X86_64, 308, 0, EPERM],
    ['read', X86_64, 0, 0, ALLOW],
    ['execve', X86_64, 59, 0, ALLOW],
    ['an x32 call', X86_64, 0x40000000 + 272, 0, EPERM],
    ['i386 unshare(CLONE_NEWUSER)', I386, 310, CLONE_NEWUSER, EPERM],
    ['i386 clone(CLONE_NEWUSER)', I386, 120, CLONE_NEWUSER, EPERM],
    ['i386 clone for a fork', I386, 120, SIGCHLD, ALLOW],
    ['i386 clone3', I386, 435, 0, ENOSYS],
    ['i386 setns', I386, 346, 0, EPERM],
    ['i386 write', I386, 4, 0, ALLOW],
    ['an ABI it does not judge', AARCH64, 97, CLONE_NEWUSER, EPERM],
  ])('x86_64 host: %s', (_name, arch, nr, arg0, verdict) => {
    expect(run(x64, { arch, nr, arg0 })).toBe(verdict);
  });

  it.each([
    ['unshare(CLONE_NEWUSER)', AARCH64, 97, CLONE_NEWUSER, EPERM],
    ['clone(CLONE_NEWUSER)', AARCH64, 220, CLONE_NEWUSER, EPERM],
    ['clone for a fork', AARCH64, 220, SIGCHLD, ALLOW],
    ['clone3', AARCH64, 435, 0, ENOSYS],
    ['setns', AARCH64, 268, 0, EPERM],
    ['openat', AARCH64, 56, CLONE_NEWUSER, ALLOW],
    ['an x86_64 call', X86_64, 272, CLONE_NEWUSER, EPERM],
  ])('arm64 host: %s', (_name, arch, nr, arg0, verdict) => {
    expect(run(arm64, { arch, nr, arg0 })).toBe(verdict);
  });

  it('is encoded as struct sock_filter, 8 bytes an instruction, and has none for an architecture it has no table for', () => {
    const bytes = hostUserNamespaceFilter('x64')!;
    expect(bytes.length).toBe(x64.length * 8);
    expect(encodeFilter(x64).equals(bytes)).toBe(true);
    expect(bytes.readUInt16LE(0)).toBe(0x20);
    expect(bytes.readUInt32LE(4)).toBe(4);
    expect(hostUserNamespaceFilter('riscv64')).toBeNull();
  });
});
