// Owns the header's project switcher: the projects the caller is in (every project for the
// admin) with their role, the current one selected; choosing another makes every page and
// every API call act in it. Hidden while the caller has one project or the API lists none.

import { useAccess } from '../access';
import { projectChoice } from '../project';

export function ProjectSwitcher() {
  const access = useAccess();
  const names = access.projects.map((p) => p.name);
  if (names.length === 0 || (names.length === 1 && names[0] === access.project)) {
    return names.length === 1 ? <span className="project-name" title="your project">{access.project}</span> : null;
  }
  // A project chosen earlier that is not in the list (removed, or not this caller's) is still shown, so the select tells the truth.
  const options = names.includes(access.project) ? access.projects : [{ name: access.project, role: null, gpu_quota: null }, ...access.projects];
  return (
    <label className="project-switcher">
      <span>Project</span>
      <select value={access.project} onChange={(e) => projectChoice.set(e.target.value)} aria-label="Project">
        {options.map((p) => (
          <option key={p.name} value={p.name}>
            {p.name}
            {p.role && p.role !== 'admin' ? ` (${p.role})` : ''}
          </option>
        ))}
      </select>
    </label>
  );
}
