// Owns the tab strip of the deployment detail: role="tablist", arrow keys move between tabs,
// each tab a link to its own hash route so a tab can be bookmarked and shared.

import { useRef, type KeyboardEvent } from 'react';
import { navigate } from '../router';

export function Tabs({ tabs, current, base, label }: { tabs: string[]; current: string; base: string; label: string }) {
  const refs = useRef<Array<HTMLAnchorElement | null>>([]);
  const onKey = (e: KeyboardEvent, i: number) => {
    const next = e.key === 'ArrowRight' ? i + 1 : e.key === 'ArrowLeft' ? i - 1 : -1;
    if (next < 0 && e.key !== 'ArrowLeft') return;
    e.preventDefault();
    const j = (next + tabs.length) % tabs.length;
    navigate(`${base}/${tabs[j]!.toLowerCase()}`);
    refs.current[j]?.focus();
  };
  return (
    <div role="tablist" aria-label={label} className="tabs">
      {tabs.map((t, i) => {
        const selected = t.toLowerCase() === current;
        return (
          <a
            key={t}
            ref={(el) => {
              refs.current[i] = el;
            }}
            role="tab"
            id={`tab-${t.toLowerCase()}`}
            aria-selected={selected}
            aria-controls="tabpanel"
            tabIndex={selected ? 0 : -1}
            href={`#${base}/${t.toLowerCase()}`}
            className={selected ? 'tab selected' : 'tab'}
            onKeyDown={(e) => onKey(e, i)}
          >
            {t}
          </a>
        );
      })}
    </div>
  );
}
