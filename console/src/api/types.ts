// Owns the names the console gives the control API's answers (docs/control-api.md). Each is
// the server's own type, `Static` of the route's response schema in src/domain/api-views.ts,
// so the console reads exactly what the server promises to send; type imports only, so no
// schema code reaches the bundle.

import type {
  ActivityPointView,
  ActivityView,
  CertificateView,
  ClusterView,
  ComponentCounts,
  DEPLOYMENT_STATUSES,
  DeploymentEventView,
  DeploymentView,
  FAMILIES,
  HardwareView,
  LogLineView,
  LogsView,
  PresetView,
  QuotaView,
  RegistryCredentialView,
  ReplicaView,
  RevisionFiguresView,
  RevisionMetricsView,
  RevisionReplicasView,
  RevisionSummaryView,
  RevisionUsageView,
  RolloutView,
  ServiceAccountView,
  TokenView,
  TrafficTargetView,
  UsageFiguresView,
  UsageView,
} from '../../../src/domain/api-views.js';
import type { Priority } from '../../../src/domain/priority.js';
import type { AutoscalingMetric } from '../../../src/domain/autoscaling-signal.js';
import type { RolloutMode } from '../../../src/domain/traffic.js';

/** An X-Priority class: a credential's cap (max_priority) names one. */
export type { Priority };
export type { AutoscalingMetric, RolloutMode };
export type { ComponentCounts, Items, ListPage } from '../../../src/domain/api-views.js';

export type Family = (typeof FAMILIES)[number];
export type Status = (typeof DEPLOYMENT_STATUSES)[number];

export type Deployment = DeploymentView;
export type RevisionSummary = RevisionSummaryView;
/** One entry of a deployment's traffic list as the API shows it: `revision` resolved even for `latest`. */
export type TrafficEntry = TrafficTargetView;
/** A revision that runs replicas of the served component, with its share. */
export type RevisionReplicas = RevisionReplicasView;
/** GET …/revision-metrics: what the gateways measured of each revision over the window. */
export type RevisionMetricsAnswer = RevisionMetricsView;
export type RevisionFigures = RevisionFiguresView;
export type Rollout = RolloutView;
export type Pool = NonNullable<DeploymentView['worker_pools']>['prefill'];

export type Replica = ReplicaView;
export type Hardware = HardwareView;
export type Cluster = ClusterView;
export type Preset = PresetView;
export type VaultToken = TokenView;
/** A registry username and password kept in the vault, bound to the registry host its password is sent to; the password is never returned, nor any part of it. */
export type RegistryCredential = RegistryCredentialView;
export type Certificate = CertificateView;
export type ServiceAccount = ServiceAccountView;

export type LogLine = LogLineView;
export type LogsAnswer = LogsView;

/** One revision's part of the usage figures: for the replicas of that revision. */
export type RevisionUsageFigures = RevisionUsageView;
export type UsageFigures = UsageFiguresView;
export type UsageAnswer = UsageView;

export type ActivityPoint = ActivityPointView;
export type ActivityAnswer = ActivityView;

/** One of a deployment's events (GET …/events): a scale decision, a rollout step, a replica's news. */
export type DeploymentEvent = DeploymentEventView;

export type Quota = QuotaView;
