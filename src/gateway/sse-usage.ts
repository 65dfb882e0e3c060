// Owns reading token usage out of an SSE response (text/event-stream) as it streams to the
// client, and — for a stream whose usage the gateway asked for on the client's behalf
// (completion-request.ts) — removing what that request added: the usage-only event
// (`data: {…,"choices":[],"usage":{…}}` and its blank line, read before it is dropped) and the
// `"usage":null` member the engine then adds to every other chunk. The client receives the
// bytes it would have received without the gateway's request.
//
// Work is on the chunk's bytes as latin1 text (indices are byte offsets), never JSON.parse: a
// chunk without `"usage"` in it costs a substring search, and one regular expression while
// generated text is counted for an estimate. Only a filtering tap holds bytes back, and only
// the unfinished last line of a chunk, until its newline arrives: it may be the usage event,
// and an SSE client cannot act on half a line.

import { estimatedUsage, GeneratedText, usageIn, type Estimation, type TokenUsage, type UsageTap } from './usage-scan.js';

/** A line longer than this is no usage event: a filtering tap sends it on without holding it. */
const FILTER_LINE_LIMIT = 64 * 1024;
/** A line longer than this is not scanned for usage by a tap that only reads (chat lines are small). */
const READ_LINE_LIMIT = 1 << 20;

const USAGE = '"usage"';
const EMPTY = Buffer.alloc(0);
/** The usage event has no choices (OpenAI's chat and completions formats). */
const NO_CHOICES = /"choices"\s*:\s*\[\s*\]/;
/** What follows `"usage"` when it is the chunk's last member and null: `: null }` to the end. */
const NULL_TO_END = /^\s*:\s*null(\s*\}\s*)$/;

export interface SseTapOptions {
  /** Remove the usage the client did not ask for (the gateway asked for it). */
  filter: boolean;
  /** Estimate when no usage arrives: a completion request answered 2xx; else null. */
  estimation: Estimation | null;
}

export class SseUsageTap implements UsageTap {
  private readonly filter: boolean;
  /** The unfinished last line so far (a filtering tap has not sent it yet). */
  private held: Buffer | null = null;
  /** Inside a line too long to hold: it passes untouched up to its newline. */
  private skipping = false;
  /** The last line seen was blank (or none was): the next line opens an event. */
  private atEventStart = true;
  /** A dropped usage event's blank line is still to come. */
  private dropBlank = false;
  private found: TokenUsage | null = null;
  private readonly generated = new GeneratedText();

  constructor(private readonly options: SseTapOptions) {
    this.filter = options.filter;
  }

  push(chunk: Buffer): Buffer {
    let head: Buffer = EMPTY;
    let data: Buffer = chunk;
    if (this.skipping) {
      const nl = chunk.indexOf(0x0a);
      if (nl === -1) return chunk;
      this.skipping = false;
      this.atEventStart = false;
      head = chunk.subarray(0, nl + 1);
      data = chunk.subarray(nl + 1);
    } else if (this.held !== null) {
      data = Buffer.concat([this.held, chunk]);
      this.held = null;
    }
    const cut = data.lastIndexOf(0x0a) + 1;
    let rest: Buffer = EMPTY;
    if (cut < data.length) {
      const unfinished = data.subarray(cut);
      if (unfinished.length > (this.filter ? FILTER_LINE_LIMIT : READ_LINE_LIMIT) || (this.filter && bareCarriageReturn(unfinished))) {
        // Not a usage event (or not a stream of \n-ended lines): it goes on as it is.
        this.skipping = true;
        rest = unfinished;
      } else {
        this.held = Buffer.from(unfinished); // a copy: the chunk it came in need not be kept
      }
    }
    const lines = cut === 0 ? EMPTY : this.lines(data.subarray(0, cut));
    if (!this.filter) return chunk;
    if (head.length === 0 && rest.length === 0) return lines;
    return Buffer.concat([head, lines, rest]);
  }

  end(): Buffer | null {
    if (this.held === null) return null;
    const last = this.held;
    this.held = null;
    const out = this.lines(last);
    return this.filter && out.length > 0 ? out : null;
  }

  finish(): TokenUsage | null {
    if (this.held !== null) this.end(); // a cut stream: its last partial line is still read
    return this.found ?? estimatedUsage(this.options.estimation, this.generated);
  }

  /** Scans whole lines (the last may lack its newline at the end); returns what to send of them. */
  private lines(block: Buffer): Buffer {
    // latin1: one character per byte, so string indices are the buffer's offsets.
    const text = block.toString('latin1');
    // Text is counted only while an estimate may be needed: a completion with no usage seen yet.
    if (this.options.estimation !== null && this.found === null) this.generated.add(text);
    if (!this.dropBlank && !text.includes(USAGE)) {
      this.atEventStart = endsWithBlankLine(text);
      return block;
    }
    const removed: Array<[number, number]> = [];
    let pos = 0;
    while (pos < text.length) {
      const nl = text.indexOf('\n', pos);
      const next = nl === -1 ? text.length : nl + 1;
      let end = nl === -1 ? text.length : nl;
      if (end > pos && text.charCodeAt(end - 1) === 0x0d) end--;
      if (end === pos) {
        if (this.dropBlank) removed.push([pos, next]);
        this.dropBlank = false;
        this.atEventStart = true;
        pos = next;
        continue;
      }
      const opensEvent = this.atEventStart;
      this.dropBlank = false;
      this.atEventStart = false;
      const usageAt = text.indexOf(USAGE, pos);
      if (usageAt !== -1 && usageAt < end && text.startsWith('data:', pos)) {
        const cut = this.usageLine(text.slice(pos, end), opensEvent);
        if (cut === 'line') removed.push([pos, next]);
        else if (cut !== null) removed.push([pos + cut[0], pos + cut[1]]);
      }
      pos = next;
    }
    if (removed.length === 0) return block;
    const kept: Buffer[] = [];
    let from = 0;
    for (const [start, stop] of removed) {
      if (start > from) kept.push(block.subarray(from, start));
      from = stop;
    }
    if (from < block.length) kept.push(block.subarray(from));
    return Buffer.concat(kept);
  }

  /**
   * A `data:` line that mentions usage: its counts are kept; a filtering tap drops it whole
   * when it is the usage-only event ('line'), or cuts its trailing `"usage":null` member
   * (the span to remove, in the line); null when nothing is removed.
   */
  private usageLine(line: string, opensEvent: boolean): 'line' | [number, number] | null {
    const usage = usageIn(line);
    if (usage) this.found = usage;
    if (!this.filter) return null;
    if (usage) {
      if (!NO_CHOICES.test(line)) return null; // usage on a chunk with choices: left as it came
      // The event's blank line goes with it, unless the event has other fields.
      if (opensEvent) this.dropBlank = true;
      return 'line';
    }
    const at = line.lastIndexOf(USAGE);
    const after = NULL_TO_END.exec(line.slice(at + USAGE.length));
    if (!after) return null;
    let comma = at - 1;
    while (comma >= 0 && (line[comma] === ' ' || line[comma] === '\t')) comma--;
    if (line[comma] !== ',') return null; // the only member: `{"usage":null}` stays as it is
    return [comma, line.length - after[1]!.length];
  }
}

/** Whether the text's last line is a blank one (an event's end). */
function endsWithBlankLine(text: string): boolean {
  let end = text.length - 1;
  if (text.charCodeAt(end) !== 0x0a) return false;
  if (end > 0 && text.charCodeAt(end - 1) === 0x0d) end--;
  return end === 0 || text.charCodeAt(end - 1) === 0x0a;
}

/** A carriage return inside a line: the stream ends its lines with CR alone. */
function bareCarriageReturn(unfinished: Buffer): boolean {
  const cr = unfinished.indexOf(0x0d);
  return cr !== -1 && cr < unfinished.length - 1;
}
