// Owns what the signed-in caller may do in the current project, for every page: their role
// there (GET /whoami, asked again when the project changes), the projects they are in
// (GET /projects, for the switcher), and the rule table of src/domain/access.ts — the same
// one the API enforces — to hide or disable what the role may not do, with the reason in the
// table's words. The API refuses anyway; this only keeps buttons from promising what fails.

import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { may as mayByRole, refusalReason, type Action, type ProjectRole } from '../../src/domain/access';
import { api } from './api/client';
import { projectChoice } from './project';
import { session } from './session';

export interface ProjectEntry {
  name: string;
  role: ProjectRole | 'admin' | null;
  gpu_quota: number | null;
}

interface Whoami {
  name: string;
  role: ProjectRole | 'admin' | 'member' | null;
  admin?: boolean;
  project?: string;
}

export interface Access {
  /** The project this tab acts in (chosen, else the caller's home project). */
  project: string;
  /** The caller's projects; empty while loading or when the API lists none. */
  projects: readonly ProjectEntry[];
  role: ProjectRole | null;
  admin: boolean;
  /** Whether the role may take the action here (true until the role is known: the API decides then). */
  may: (action: Action) => boolean;
  /** Why not, in words for a disabled button's title or a note. */
  reason: (action: Action) => string;
}

const DEFAULT_PROJECT = 'default';

/** The project the API acts in without a header: `default` for its members and the admin, else the first. */
function homeOf(projects: readonly ProjectEntry[], whoami: Whoami | null): string {
  if (whoami?.project) return whoami.project;
  if (whoami?.role === 'admin' || whoami?.admin || projects.some((p) => p.name === DEFAULT_PROJECT) || projects.length === 0) return DEFAULT_PROJECT;
  return [...projects].map((p) => p.name).sort()[0] ?? DEFAULT_PROJECT;
}

/** An older account's `member` reads as a developer, as the API reads it. */
const roleOf = (w: Whoami | null): ProjectRole | null => (w === null || w.role === 'admin' || w.role === null ? null : w.role === 'member' ? 'developer' : w.role);

const AccessContext = createContext<Access | null>(null);

export function AccessProvider({ chosen, children }: { chosen: string | null; children: ReactNode }) {
  // Who signed in (their whoami at sign-in) until the project's answer comes: the menu is right from the first paint.
  const [whoami, setWhoami] = useState<Whoami | null>(() => session.account());
  const [projects, setProjects] = useState<ProjectEntry[]>([]);

  useEffect(() => {
    const aborter = new AbortController();
    api.get<Whoami>('/whoami', aborter.signal).then(setWhoami, () => undefined);
    // A server without projects answers 404 here: no switcher then.
    api.get<{ items: ProjectEntry[] }>('/projects', aborter.signal).then(
      (r) => {
        setProjects(r.items);
        // A project chosen earlier that this caller is not in (another account signed in, a removal): back to the home project.
        if (chosen !== null && r.items.length > 0 && !r.items.some((p) => p.name === chosen)) projectChoice.set(null);
      },
      () => setProjects([]),
    );
    return () => aborter.abort();
  }, [chosen]);

  const admin = whoami !== null && (whoami.admin === true || whoami.role === 'admin');
  const role = roleOf(whoami);
  const access: Access = {
    project: chosen ?? homeOf(projects, whoami),
    projects,
    role,
    admin,
    may: (action) => whoami === null || mayByRole(role, admin, action),
    reason: (action) => refusalReason(role, action),
  };
  return <AccessContext.Provider value={access}>{children}</AccessContext.Provider>;
}

export function useAccess(): Access {
  const access = useContext(AccessContext);
  if (!access) throw new Error('useAccess outside AccessProvider');
  return access;
}

/**
 * Controls the role may not use, disabled together, with the reason beside them and as
 * their title: a viewer sees what an action would be and why it is not theirs.
 */
export function Allowed({ action, children, inline }: { action: Action; children: ReactNode; inline?: boolean }) {
  const access = useAccess();
  if (access.may(action)) return <>{children}</>;
  const reason = access.reason(action);
  return (
    <fieldset className={inline ? 'plain inline' : 'plain'} disabled title={reason} data-refused={action}>
      {children}
      {!inline && (
        <p className="subtle refusal" role="note">
          {reason}
        </p>
      )}
    </fieldset>
  );
}
