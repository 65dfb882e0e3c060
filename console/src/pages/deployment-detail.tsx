import type { Family } from '../api/types';
import type { Account } from '../session';
export function DeploymentDetailPage(props: { family: Family; id: number; tab: string; account: Account }) {
  return <section><h1>{props.family} {props.id}</h1></section>;
}
