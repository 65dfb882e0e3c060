// Placeholder replaced by the settings tab.
import type { Deployment } from '../api/types';
import type { Account } from '../session';
export function SettingsTab(props: { deployment: Deployment; account: Account; onChanged: () => void }) {
  void props;
  return <section />;
}
