// Owns the project this browser tab acts in: chosen in the header's switcher and kept in
// sessionStorage (this tab only, like the key), sent with every API call as
// X-Infergate-Project. None chosen: no header, and the API acts in the caller's home project.

const KEY = 'infergate.project';
const HEADER = 'x-infergate-project';

type Listener = () => void;
const listeners = new Set<Listener>();

export const projectChoice = {
  get(): string | null {
    return sessionStorage.getItem(KEY);
  },
  set(name: string | null): void {
    if (name === null) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, name);
    for (const l of listeners) l();
  },
  subscribe(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

/** The header naming the chosen project, for every call of api/client.ts. */
export function projectHeader(): Record<string, string> {
  const name = projectChoice.get();
  return name ? { [HEADER]: name } : {};
}
