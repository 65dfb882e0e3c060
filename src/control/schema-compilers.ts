// Owns how the control API turns its route schemas into code: request validators (AJV) and
// response serialisers (fast-json-stringify), each compiled on the route's first use rather
// than when the app starts. The API has about 150 routes; compiling all of them up front was
// the larger part of `infergate serve`'s start-up CPU, for routes a process may never serve.
//
// Rules: bodies are checked strictly (no type coercion: "1" is not an integer); path and
// query strings are coerced, since they are always strings on the wire — integers only from
// decimal digits (see decimalIntegers).

import { Ajv, type ErrorObject } from 'ajv';
import fastJsonStringify from 'fast-json-stringify';

type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** The validator compiler fastify calls once per route and request part. */
export function validatorCompiler(): (route: { schema: object; httpPart?: string }) => Validator {
  // One AJV per rule, created on the first compile: a process that serves no API request
  // (a gateway-only role) never builds either.
  let strict: Ajv | undefined;
  let coercing: Ajv | undefined;
  const compile = (schema: object, httpPart: string | undefined): Validator => {
    if (httpPart === 'body') {
      strict ??= new Ajv({ allErrors: false, coerceTypes: false, useDefaults: true, removeAdditional: false, strict: false });
      return strict.compile(schema);
    }
    coercing ??= new Ajv({ allErrors: false, coerceTypes: true, useDefaults: true, removeAdditional: false, strict: false });
    return decimalIntegers(schema, coercing.compile(schema));
  };
  return ({ schema, httpPart }) => {
    let compiled: Validator | undefined;
    // fastify reads `errors` off the function it was given after a failed check.
    const validate: Validator = (data) => {
      compiled ??= compile(schema, httpPart);
      const ok = compiled(data);
      validate.errors = compiled.errors ?? null;
      return ok;
    };
    return validate;
  };
}

/** The serializer compiler fastify calls once per route, status code and content type. */
export function serializerCompiler(): (route: { schema: object }) => (data: unknown) => string {
  return ({ schema }) => {
    let compiled: ((data: unknown) => string) | undefined;
    return (data) => (compiled ??= fastJsonStringify(schema))(data);
  };
}

const DECIMAL = /^-?[0-9]+$/;

/**
 * AJV coerces any string JavaScript reads as a number: "1e400" becomes Infinity (which passes
 * as an integer), "0x10" 16, " 7 " 7. Integer parameters must be plain decimal digits;
 * anything else is a 400 naming the parameter, before the coercing validator runs (whose
 * schema bounds, e.g. MAX_ID, catch digits too many to be an id).
 */
function decimalIntegers(schema: object, validate: Validator): Validator {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const names = Object.entries(properties)
    .filter(([, s]) => s.type === 'integer')
    .map(([name]) => name);
  if (names.length === 0) return validate;
  const check: Validator = (data) => {
    const values = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
    const bad = names.find((n) => values[n] !== undefined && !(typeof values[n] === 'string' && DECIMAL.test(values[n])));
    if (bad !== undefined) {
      const message = Array.isArray(values[bad]) ? 'must be given once' : 'must be an integer in decimal digits';
      check.errors = [{ instancePath: `/${bad}`, schemaPath: '', keyword: 'type', params: {}, message }];
      return false;
    }
    const ok = validate(data);
    check.errors = validate.errors ?? null;
    return ok;
  };
  return check;
}
