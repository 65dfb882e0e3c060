// Owns the Members page of the current project: who is in it (people by e-mail address, the
// identity provider's groups) and their roles. Owners add members, change a role and remove a
// member (after a confirmation); everyone else reads the list, with the reason they cannot
// change it.

import { useState, type FormEvent } from 'react';
import { PROJECT_ROLES, type ProjectRole } from '../../../src/domain/access';
import { api, ApiError } from '../api/client';
import { useAccess } from '../access';
import { usePoll } from '../hooks';
import { ConfirmDialog } from '../components/confirm';
import { Field, FormError, toProblems, type Problems } from '../components/form';

interface Member {
  subject: string;
  role: ProjectRole;
}

const ROLE_WORDS: Record<ProjectRole, string> = {
  owner: 'owner: members, service accounts and everything in the project',
  developer: 'developer: deployments, tokens, certificates, credentials, logs, terminal',
  viewer: 'viewer: reads, never a secret, a key, a terminal or logs',
};

/** `alice@example.com` is read as `user:alice@example.com`; otherwise the subject names its kind. */
function subjectOf(raw: string): string {
  const s = raw.trim();
  return /^(user|group):/.test(s) || !s.includes('@') ? s : `user:${s}`;
}

const memberPath = (project: string, subject: string) => `/projects/${encodeURIComponent(project)}/members/${encodeURIComponent(subject)}`;

export function MembersPage() {
  const access = useAccess();
  const project = access.project;
  const list = usePoll<{ items: Member[] }>(`/projects/${encodeURIComponent(project)}/members`, 10_000);
  const [subject, setSubject] = useState('');
  const [role, setRole] = useState<ProjectRole>('developer');
  const [problems, setProblems] = useState<Problems>({});
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState<Member | null>(null);
  const manage = access.may('member.manage');

  const fail = (err: unknown) => {
    const fields = err instanceof ApiError ? err.problems() : [];
    if (fields.length > 0) setProblems(toProblems(fields));
    else setError(err instanceof Error ? err.message : String(err));
  };

  const add = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    setError(null);
    try {
      await api.put(memberPath(project, subjectOf(subject)), { role });
      setSubject('');
      list.reload();
    } catch (err) {
      fail(err);
    }
  };

  const change = async (m: Member, next: ProjectRole) => {
    setError(null);
    try {
      await api.put(memberPath(project, m.subject), { role: next });
      list.reload();
    } catch (err) {
      fail(err);
    }
  };

  const remove = async () => {
    if (!pending) return;
    setError(null);
    try {
      await api.del(memberPath(project, pending.subject));
      list.reload();
    } catch (err) {
      fail(err);
    }
    setPending(null);
  };

  const items = list.data?.items ?? null;
  return (
    <section>
      <h1>Members</h1>
      <p className="subtle">
        Who is in <strong>{project}</strong> and what each may do. A member is a person (<code>user:</code> and their e-mail address) or a group of the identity provider
        (<code>group:</code> and its name); a person in several gets the highest role.
      </p>
      {manage ? (
        <form className="panel" id="new-member" onSubmit={(e) => void add(e)}>
          <div className="grid2">
            <Field label="Member" field="subject" problems={problems} hint="user:alice@example.com, alice@example.com or group:ml-platform">
              {(p) => <input {...p} type="text" value={subject} onChange={(e) => setSubject(e.target.value)} required maxLength={320} />}
            </Field>
            <Field label="Role" field="role" problems={problems}>
              {(p) => (
                <select {...p} value={role} onChange={(e) => setRole(e.target.value as ProjectRole)}>
                  {PROJECT_ROLES.map((r) => (
                    <option key={r} value={r}>
                      {ROLE_WORDS[r]}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          </div>
          <button className="button primary" type="submit">
            Add member
          </button>
        </form>
      ) : (
        <p className="notice" role="note" data-refused="member.manage">
          {access.reason('member.manage')}.
        </p>
      )}
      <FormError message={error ?? list.error?.message ?? null} />
      {items === null ? (
        !list.error && <p className="subtle">Loading…</p>
      ) : items.length === 0 ? (
        <p className="subtle">No members yet{manage ? ': add the first above.' : '.'}</p>
      ) : (
        <div className="table-wrap">
          <table aria-label={`Members of ${project}`}>
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Role</th>
                {manage && (
                  <th scope="col">
                    <span className="subtle">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {items.map((m) => (
                <tr key={m.subject} data-member={m.subject}>
                  <td>{m.subject}</td>
                  <td>
                    {manage ? (
                      <select aria-label={`Role of ${m.subject}`} value={m.role} onChange={(e) => void change(m, e.target.value as ProjectRole)}>
                        {PROJECT_ROLES.map((r) => (
                          <option key={r} value={r}>
                            {r}
                          </option>
                        ))}
                      </select>
                    ) : (
                      m.role
                    )}
                  </td>
                  {manage && (
                    <td>
                      <button type="button" className="button small" aria-label={`Remove ${m.subject}`} onClick={() => setPending(m)}>
                        Remove
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ConfirmDialog open={pending !== null} title={pending ? `Remove ${pending.subject}?` : ''} confirmLabel="Remove" danger onConfirm={() => void remove()} onCancel={() => setPending(null)}>
        <p>They lose what this membership gave them in {project} on their next request.</p>
      </ConfirmDialog>
    </section>
  );
}
