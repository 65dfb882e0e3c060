// Owns GET /presets and GET /presets/{id}: the general-inference recipes a create can name in
// `preset`, with the fields each fills and what the local runtime runs for its image.

import { Type } from '../../core/typebox.js';
import { PlatformError } from '../../core/errors.js';
import { resolveImage } from '../../domain/image-map.js';
import { PRESETS, type Preset } from '../../domain/presets.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, PresetResponse } from '../schemas.js';

export function registerPresetRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['catalog'];
  const view = (p: Preset) => {
    const launch = resolveImage(ctx.deps.images, p.image, p.tag);
    return {
      ...p,
      fills: ['image', 'tag', 'container_port', 'protocol', 'health_check_path', ...(p.registry_username !== null ? ['registry_username'] : [])],
      local_runtime: launch.kind === 'engine' ? `reference engine, flavor ${launch.flavor} (simulated GPU)` : 'the command, as a host process',
    };
  };

  app.get('/presets', { schema: { tags, response: { 200: Type.Object({ items: Type.Array(PresetResponse) }) } } }, async () => ({
    items: PRESETS.map(view),
  }));

  app.get(
    '/presets/:id',
    { schema: { tags, params: Type.Object({ id: Type.String() }), response: { 200: PresetResponse, 404: ErrorResponse } } },
    async (request) => {
      const preset = PRESETS.find((p) => p.id === request.params.id);
      if (!preset) throw new PlatformError('not_found', `no preset "${request.params.id}": GET /presets lists ${PRESETS.map((p) => p.id).join(', ')}`);
      return view(preset);
    },
  );
}
