// Owns how the controller's status reason reads in the console: its words as they are, the
// first one capitalised when it is a plain word ("pulling …" becomes "Pulling …"; an image or
// an address at the start is left alone), nothing when there is no reason.

export function statusReasonText(reason: string | null | undefined): string | null {
  const text = reason?.replace(/\s+/g, ' ').trim();
  if (!text) return null;
  return /^[a-z]+(?=[\s:;,]|$)/.test(text) ? text.charAt(0).toUpperCase() + text.slice(1) : text;
}
