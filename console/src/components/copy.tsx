// Owns the copy button: copies a value and says so, for endpoint URLs, snippets and secrets.

import { useState } from 'react';

export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      // Clipboard access is refused outside secure contexts; select a hidden field instead.
      const area = document.createElement('textarea');
      area.value = value;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setDone(true);
    window.setTimeout(() => setDone(false), 1500);
  };
  return (
    <button type="button" className="button small" onClick={() => void copy()} aria-label={`${label}: ${value.length > 60 ? value.slice(0, 60) + '…' : value}`}>
      {done ? 'Copied' : label}
    </button>
  );
}

/** A secret shown once: the value, a copy button, and the sentence saying it will not be shown again. */
export function SecretOnce({ title, value, onDismiss }: { title: string; value: string; onDismiss: () => void }) {
  return (
    <div className="secret" role="alert">
      <strong>{title}</strong>
      <p>Copy it now: it will not be shown again.</p>
      <div className="secret-row">
        <code data-testid="secret-value">{value}</code>
        <CopyButton value={value} />
      </div>
      <button type="button" className="button" onClick={onDismiss}>
        Done
      </button>
    </div>
  );
}
