// Owns the pods of orchestrated deployments under the Docker runtime: one network namespace per
// deployment, which its members (Frontend, Workers, Prefill, Decode of every revision) share,
// as a Kubernetes pod's containers do — the Frontend reaches its workers, Decode pulls KV
// blocks from Prefill, and nothing else reaches them but the host. A pod is a small holder
// container (container-spec.ts planHolder) on the service's network, where inter-container
// traffic is off; each member is a container started with `NetworkMode: container:<holder>`
// and a port of its own in the pod, and its address is the holder's bridge address and that
// port. The holder is made for the deployment's first member and removed with its last; a
// holder that stops behind the runtime's back is made again and its members told to restart
// into it; after a restart of the service, members still running are taken back with their
// holder (by label), and holders no member needs are swept.

import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { holderName, LABEL, planHolder, POD_FIRST_PORT } from './container-spec.js';

/** A pod's holder as its members need it: the container to join and the address the host reaches them at. */
export interface PodHolder {
  id: string;
  ip: string;
}

/** One member's place in its deployment's pod. */
export interface PodSeat {
  /** Its port in the pod: unique among the pod's members while it holds the seat. */
  readonly port: number;
  /** The running holder, made or started first when there is none; serialized with the pod's other holder operations. */
  join(): Promise<PodHolder>;
  /** The holder as last joined (null before, and once it was lost). */
  current(): PodHolder | null;
  /** Called when the holder stops behind the runtime's back: the member's network went with it. */
  onLost(listener: () => void): void;
  /** Gives the seat up; the holder goes with the pod's last member. */
  leave(): Promise<void>;
  /** Gives the seat up and leaves the holder to the sweep (a member that could not be taken back). */
  forget(): void;
}

export interface DockerPodsDeps {
  docker: Dockerode;
  scope: string;
  network: string;
  engineImage: string;
  /** Makes the reference engine image present (the holder runs it). */
  prepareEngineImage(onNote: (line: string) => void): Promise<void>;
  logger: Logger;
}

class Pod {
  /** Member replica → its port. */
  readonly seats = new Map<string, number>();
  readonly lostListeners = new Map<string, () => void>();
  holder: PodHolder | null = null;
  /** Holder operations, one at a time. */
  queue: Promise<unknown> = Promise.resolve();
  /** Set while the runtime removes the holder itself: its exit is not a loss. */
  removing = false;
}

export class DockerPods {
  private readonly pods = new Map<number, Pod>();

  constructor(private readonly deps: DockerPodsDeps) {}

  /**
   * A seat in the deployment's pod for `replica`: at `port` (a member taken back keeps the one
   * it listens on; null when another member holds it), else the lowest free one.
   */
  seat(deploymentId: number, replica: string, port?: number): PodSeat | null {
    let pod = this.pods.get(deploymentId);
    if (pod === undefined) {
      pod = new Pod();
      this.pods.set(deploymentId, pod);
    }
    const taken = new Set(pod.seats.values());
    if (port !== undefined && taken.has(port)) return null;
    let chosen = port ?? POD_FIRST_PORT;
    while (port === undefined && taken.has(chosen)) chosen++;
    pod.seats.set(replica, chosen);
    const own = pod;
    return {
      port: chosen,
      join: () =>
        this.serial(own, () => {
          // A member stopped meanwhile must not make a holder nobody would remove.
          if (own.seats.get(replica) !== chosen) return Promise.reject(new Error('it left its pod'));
          return this.ensureHolder(deploymentId, own);
        }),
      current: () => own.holder,
      onLost: (listener) => own.lostListeners.set(replica, listener),
      leave: () => {
        this.unseat(own, replica);
        return this.serial(own, () => this.removeIfEmpty(deploymentId, own));
      },
      forget: () => this.unseat(own, replica),
    };
  }

  /**
   * Takes back the running holder `holderId` for the deployment's pod after a restart of the
   * service (a member running in it is being taken back); false when it is not that pod's
   * running holder (the member is then reaped, its network being gone).
   */
  takeBack(deploymentId: number, holderId: string): Promise<boolean> {
    const pod = this.pods.get(deploymentId);
    if (pod === undefined) return Promise.resolve(false);
    return this.serial(pod, async () => {
      if (pod.holder !== null) return pod.holder.id === holderId;
      const info = await this.deps.docker
        .getContainer(holderId)
        .inspect()
        .catch(() => null);
      const ours = info?.Config.Labels?.[LABEL.scope] === this.deps.scope && info.Config.Labels[LABEL.pod] === String(deploymentId);
      const ip = info ? holderAddress(info, this.deps.network) : null;
      if (!ours || !info.State.Running || ip === null) return false;
      pod.holder = { id: info.Id, ip };
      this.watch(deploymentId, pod, info.Id);
      this.deps.logger.info({ deployment_id: deploymentId, holder: info.Id.slice(0, 12), ip }, 'took back a pod holder left running by an earlier run');
      return true;
    });
  }

  /** Whether `container` (labelled as a pod holder) is one a pod of this run holds. */
  holds(container: Dockerode.ContainerInfo): boolean {
    const pod = this.pods.get(Number(container.Labels[LABEL.pod]));
    return pod !== undefined && pod.seats.size > 0 && pod.holder?.id === container.Id;
  }

  private unseat(pod: Pod, replica: string): void {
    pod.seats.delete(replica);
    pod.lostListeners.delete(replica);
  }

  private serial<T>(pod: Pod, step: () => Promise<T>): Promise<T> {
    const next = pod.queue.then(step, step);
    pod.queue = next.catch(() => undefined);
    return next;
  }

  /** The running holder: the known one, else one of this pod found by label (started if stopped), else a new one. */
  private async ensureHolder(deploymentId: number, pod: Pod): Promise<PodHolder> {
    if (pod.holder !== null) return pod.holder;
    const { docker, scope, network, engineImage, logger } = this.deps;
    await this.deps.prepareEngineImage((line) => logger.info({ deployment_id: deploymentId }, line));
    const found = await docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`, `${LABEL.pod}=${deploymentId}`] } });
    let container: Dockerode.Container | null = null;
    for (const c of found) {
      const candidate = docker.getContainer(c.Id);
      if (container === null && (c.State === 'running' || (await candidate.start().then(() => true, () => false)))) container = candidate;
      else await candidate.remove({ force: true, v: true }).catch(() => undefined);
    }
    if (container === null) {
      const name = holderName(scope, deploymentId);
      // A holder of this name left half-made by a crash is not one to keep.
      await docker
        .getContainer(name)
        .remove({ force: true })
        .catch(() => undefined);
      container = await docker.createContainer({ name, ...planHolder(deploymentId, { scope, network, engineImage }) });
      await container.start();
      logger.info({ deployment_id: deploymentId, holder: container.id.slice(0, 12) }, 'made the pod holder of an orchestrated deployment');
    }
    const info = await container.inspect();
    const ip = holderAddress(info, network);
    if (!info.State.Running || ip === null) throw new Error(`the pod holder ${container.id.slice(0, 12)} is not running on ${network}`);
    pod.holder = { id: info.Id, ip };
    this.watch(deploymentId, pod, info.Id);
    return pod.holder;
  }

  /** The holder's exit, unless the runtime removes it: its members lost their network and restart into a new one. */
  private watch(deploymentId: number, pod: Pod, id: string): void {
    void this.deps.docker
      .getContainer(id)
      .wait()
      .catch(() => undefined)
      .then(() => {
        if (pod.removing || pod.holder?.id !== id) return;
        pod.holder = null;
        this.deps.logger.warn({ deployment_id: deploymentId, holder: id.slice(0, 12), members: pod.seats.size }, 'the pod holder of an orchestrated deployment stopped: its members restart in a new one');
        for (const listener of [...pod.lostListeners.values()]) listener();
      });
  }

  private async removeIfEmpty(deploymentId: number, pod: Pod): Promise<void> {
    if (pod.seats.size > 0) return;
    const { docker, scope } = this.deps;
    pod.removing = true;
    try {
      const found = await docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`, `${LABEL.pod}=${deploymentId}`] } });
      for (const c of found) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
      if (found.length > 0) this.deps.logger.info({ deployment_id: deploymentId }, 'removed the pod holder of an orchestrated deployment: its last member stopped');
    } finally {
      pod.removing = false;
      pod.holder = null;
    }
    if (pod.seats.size === 0 && this.pods.get(deploymentId) === pod) this.pods.delete(deploymentId);
  }
}

/** The holder's address on the service's network, where the host reaches its members. */
function holderAddress(info: Dockerode.ContainerInspectInfo, network: string): string | null {
  const ip = info.NetworkSettings.Networks?.[network]?.IPAddress;
  return ip ? ip : null;
}
