// Owns the first step of creating a deployment: which family. The console creates general
// deployments and aggregated orchestrated ones; disaggregated ones are made through the API.
// A role that may not create deployments is told why.

import { useAccess } from '../access';

export function CreateChooserPage() {
  const access = useAccess();
  if (!access.may('deployment.manage')) {
    return (
      <section>
        <h1>Create a deployment</h1>
        <p className="notice" role="note" data-refused="deployment.manage">
          {access.reason('deployment.manage')}.
        </p>
      </section>
    );
  }
  return (
    <section>
      <h1>Create a deployment</h1>
      <div className="grid2">
        <a className="panel" href="#/deployments/new/general">
          <h2>General inference</h2>
          <p className="subtle">Your engine and command: vLLM, SGLang, TGI, Triton, Ollama, a vendor model container, or any image. Start from a preset.</p>
        </a>
        <a className="panel" href="#/deployments/new/orchestrated">
          <h2>Orchestrated inference (beta)</h2>
          <p className="subtle">Pick a model and a hardware type; the platform runs a Frontend and GPU workers (aggregated).</p>
        </a>
      </div>
      <p className="subtle">
        Disaggregated (prefill/decode) deployments are created through the API: <code>POST /deployments/orchestrated</code> with <code>serving_mode: "disaggregated"</code> and <code>worker_pools</code>.
      </p>
    </section>
  );
}
