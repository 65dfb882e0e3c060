// Owns the seccomp filter every sandboxed process runs under: a classic BPF program, built
// here as bytes for bubblewrap's `--seccomp FD`, that stops a replica (and a terminal's shell)
// from making user namespaces. A user namespace is how unprivileged code gets the capabilities
// to mount: with one, a replica could lay its own program over a path the platform later runs
// (the terminal's setpriv was such a path), and the kernel's namespace code is a large attack
// surface besides. Everything else is allowed. Pure: no I/O.
//
// The program (for each ABI the host can run):
//   unshare(flags) / clone(flags)  → EPERM when flags has CLONE_NEWUSER
//   clone3(args)                   → ENOSYS: its flags sit in a struct seccomp cannot read, and
//                                    glibc, Go and Rust fall back to clone on ENOSYS
//   setns(fd, type)                → EPERM: joining a namespace is never needed inside
// and on x86_64 the x32 ABI (no Linux distribution ships programs for it) is refused whole.

/** struct seccomp_data: `nr` at 0, `arch` at 4, `args[i]` at 16 + 8i (the low word first on these little-endian ABIs). */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;

// Classic BPF opcodes (linux/filter.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JSET_K = 0x45;
const JGE_K = 0x35;
const RET_K = 0x06;

// Seccomp return values (linux/seccomp.h) and errnos.
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

const CLONE_NEWUSER = 0x10000000;
const X32_SYSCALL_BIT = 0x40000000;

/** A system-call ABI: its audit architecture and the numbers of the calls the filter judges. */
export interface SyscallAbi {
  name: string;
  audit: number;
  clone: number;
  unshare: number;
  setns: number;
  clone3: number;
  /** x86_64 only: the x32 ABI shares its audit architecture, told apart by a bit in `nr`. */
  x32Bit?: boolean;
}

// Numbers from the kernel's syscall tables (arch/x86/entry/syscalls, include/uapi/asm-generic/unistd.h, arch/arm/tools/syscall.tbl).
const X86_64: SyscallAbi = { name: 'x86_64', audit: 0xc000003e, clone: 56, unshare: 272, setns: 308, clone3: 435, x32Bit: true };
const I386: SyscallAbi = { name: 'i386', audit: 0x40000003, clone: 120, unshare: 310, setns: 346, clone3: 435 };
const AARCH64: SyscallAbi = { name: 'aarch64', audit: 0xc00000b7, clone: 220, unshare: 97, setns: 268, clone3: 435 };
const ARM: SyscallAbi = { name: 'arm', audit: 0x40000028, clone: 120, unshare: 337, setns: 375, clone3: 435 };

/** The ABIs a process on this Node architecture can call the kernel with (the native one and its 32-bit compat). */
export function abisFor(arch: string): SyscallAbi[] | null {
  if (arch === 'x64') return [X86_64, I386];
  if (arch === 'arm64') return [AARCH64, ARM];
  return null;
}

export interface BpfInstruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** Where a conditional jump goes when true: one of the shared returns at the program's end. */
type Tail = 'eperm' | 'enosys' | 'flags';

interface Draft {
  code: number;
  k: number;
  /** True branch: a shared tail, or (dispatch only) an ABI's block by index; false falls through. */
  to?: Tail | { block: number };
}

const TAILS: Record<Tail, BpfInstruction[]> = {
  eperm: [{ code: RET_K, jt: 0, jf: 0, k: RET_ERRNO | EPERM }],
  enosys: [{ code: RET_K, jt: 0, jf: 0, k: RET_ERRNO | ENOSYS }],
  // unshare and clone: refused only when their flags ask for a new user namespace.
  flags: [
    { code: LD_W_ABS, jt: 0, jf: 0, k: OFFSET_ARG0_LOW },
    { code: JSET_K, jt: 0, jf: 1, k: CLONE_NEWUSER },
    { code: RET_K, jt: 0, jf: 0, k: RET_ERRNO | EPERM },
    { code: RET_K, jt: 0, jf: 0, k: RET_ALLOW },
  ],
};

function abiBlock(abi: SyscallAbi): Draft[] {
  return [
    { code: LD_W_ABS, k: OFFSET_NR },
    ...(abi.x32Bit ? [{ code: JGE_K, k: X32_SYSCALL_BIT, to: 'eperm' as const }] : []),
    { code: JEQ_K, k: abi.unshare, to: 'flags' },
    { code: JEQ_K, k: abi.clone, to: 'flags' },
    { code: JEQ_K, k: abi.clone3, to: 'enosys' },
    { code: JEQ_K, k: abi.setns, to: 'eperm' },
    { code: RET_K, k: RET_ALLOW },
  ];
}

/**
 * The filter's instructions for these ABIs. A call from an ABI not listed is refused with
 * EPERM: nothing legitimate on this host uses one, and an unjudged ABI would be a way around.
 */
export function userNamespaceFilter(abis: readonly SyscallAbi[]): BpfInstruction[] {
  // Layout: load arch; one "arch == A → A's block" test per ABI; else EPERM; the blocks; the shared tails.
  const drafts: Draft[] = [{ code: LD_W_ABS, k: OFFSET_ARCH }, ...abis.map((abi, i) => ({ code: JEQ_K, k: abi.audit, to: { block: i } })), { code: RET_K, k: RET_ERRNO | EPERM }];
  const blockAt: number[] = [];
  for (const abi of abis) {
    blockAt.push(drafts.length);
    drafts.push(...abiBlock(abi));
  }
  const tailAt = {} as Record<Tail, number>;
  let next = drafts.length;
  for (const tail of Object.keys(TAILS) as Tail[]) {
    tailAt[tail] = next;
    next += TAILS[tail].length;
  }
  // Jumps are relative to the next instruction, forward only, and must fit in a byte.
  const jump = (from: number, to: number): number => {
    const offset = to - from - 1;
    if (offset < 0 || offset > 255) throw new Error(`seccomp filter: a jump of ${offset} is out of range`);
    return offset;
  };
  const body = drafts.map((d, i): BpfInstruction => {
    const target = d.to === undefined ? null : typeof d.to === 'string' ? tailAt[d.to] : blockAt[d.to.block]!;
    return { code: d.code, jt: target === null ? 0 : jump(i, target), jf: 0, k: d.k >>> 0 };
  });
  return [...body, ...(Object.keys(TAILS) as Tail[]).flatMap((t) => TAILS[t])];
}

/** The program as `struct sock_filter[]` in the host's byte order (little-endian on every ABI above). */
export function encodeFilter(program: readonly BpfInstruction[]): Buffer {
  const buf = Buffer.alloc(program.length * 8);
  program.forEach((ins, i) => {
    buf.writeUInt16LE(ins.code, i * 8);
    buf.writeUInt8(ins.jt, i * 8 + 2);
    buf.writeUInt8(ins.jf, i * 8 + 3);
    buf.writeUInt32LE(ins.k, i * 8 + 4);
  });
  return buf;
}

/** The filter for this host, or null where no ABI table is known (the sandbox then says so at start-up). */
export function hostUserNamespaceFilter(arch: string = process.arch): Buffer | null {
  const abis = abisFor(arch);
  return abis === null ? null : encodeFilter(userNamespaceFilter(abis));
}
