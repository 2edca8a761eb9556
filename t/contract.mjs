// Contract checks against openapi.json, the OpenAPI 3.1 description the
// service serves at GET /openapi.json.
//
//   validateResponse(method, path, status, body, headers[, text])
//       throws unless the answer is one the document describes: the route
//       and method are documented, the status is documented for the
//       operation and the JSON body matches its schema, the required
//       response headers are there, X-Request-Id is on every answer and an
//       error body's requestId equals it.  t/integration/lib.mjs api() calls
//       it on every response.
//   validateSchema(name, value)
//       throws unless value matches components.schemas[name] (e.g. "Event"
//       for a webhook body).
//   lintOpenapi()
//       runs Redocly's linter (t/redocly.yaml) and returns its findings.
//   documentedRoutes()
//       ["GET /me", "POST /waitlist/entries", ...] with "{}" for parameters.
//
// Besides the documented operations, three answers the service gives on any
// path (described in info.description) are accepted:
//   - 404 not_found for a path that is no documented route (it does not
//     exist; a route the service has but the document lacks fails);
//   - 405 method_not_allowed for another method on a documented path, with
//     an Allow header naming exactly the documented methods;
//   - 400 payload_too_large (a body over 64 KiB is refused before routing).

import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const T_DIR = dirname(fileURLToPath(import.meta.url));
export const OPENAPI_FILE = join(T_DIR, '..', 'openapi.json');
export const BASE_PATH = '/v1/external';
export const openapi = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));

const DOC_ID = 'https://contract.invalid/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const ajv = new Ajv2020({ strict: true, strictTypes: true, allErrors: true, allowUnionTypes: true });
addFormats(ajv);
// OpenAPI's own schema keywords, and the members of the document around
// the schemas (ajv compiles the document root to resolve references into
// it): annotations here.
ajv.addVocabulary([
  'example', 'discriminator', 'xml', 'externalDocs',
  'openapi', 'jsonSchemaDialect', 'info', 'servers', 'security', 'tags', 'paths', 'webhooks', 'components',
]);
ajv.addSchema(openapi, DOC_ID);

const validators = new Map();
function validatorAt(pointer) {
  let v = validators.get(pointer);
  if (!v) {
    v = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    validators.set(pointer, v);
  }
  return v;
}

const escapePointer = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const pointerOf = (...parts) => parts.map((p) => `/${escapePointer(String(p))}`).join('');

// Follows a local $ref; returns [object, its JSON pointer].
function deref(obj, pointer) {
  while (obj && typeof obj.$ref === 'string') {
    if (!obj.$ref.startsWith('#/')) throw new Error(`contract: only local $ref supported: ${obj.$ref}`);
    pointer = obj.$ref.slice(1);
    obj = pointer.split('/').slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((o, k) => (o == null ? undefined : o[k]), openapi);
  }
  return [obj, pointer];
}

const ROUTES = Object.entries(openapi.paths).map(([template, item]) => ({
  template,
  segments: template.split('/').slice(1),
  item,
  methods: METHODS.filter((m) => item[m]).map((m) => m.toUpperCase()),
}));

// Documented operations as "METHOD /path", parameters written "{}".
export function documentedRoutes() {
  return ROUTES.flatMap((r) => r.methods.map((m) => `${m} ${r.template.replace(/\{[^}]*\}/g, '{}')}`));
}

// The documented path template a concrete path (relative to the base)
// matches; literal segments beat parameters.
function findRoute(path) {
  const segs = path.split('/').slice(1);
  let best = null;
  let bestLiterals = -1;
  for (const r of ROUTES) {
    if (r.segments.length !== segs.length) continue;
    let literals = 0;
    const ok = r.segments.every((s, i) => {
      if (/^\{[^}]+\}$/.test(s)) return segs[i] !== '';
      literals += 1;
      return s === segs[i];
    });
    if (ok && literals > bestLiterals) {
      best = r;
      bestLiterals = literals;
    }
  }
  return best;
}

// The path relative to the base, or null when outside it.  Accepts a full
// URL, a path with the base, or a path relative to the base.
function apiPath(path) {
  let p = String(path);
  const full = /^https?:\/\//i.test(p);
  if (full) p = new URL(p).pathname;
  p = p.replace(/[?#].*$/, '');
  if (p === BASE_PATH || p.startsWith(`${BASE_PATH}/`)) return p.slice(BASE_PATH.length);
  return full ? null : p;
}

function headerOf(headers, name) {
  if (!headers) return null;
  if (typeof headers.get === 'function') return headers.get(name);
  const k = Object.keys(headers).find((h) => h.toLowerCase() === name.toLowerCase());
  if (k === undefined) return null;
  const v = headers[k];
  return Array.isArray(v) ? v.join(', ') : String(v);
}

const excerpt = (body, text) => {
  const s = body !== null && body !== undefined ? JSON.stringify(body) : String(text ?? '');
  return s.length > 1500 ? `${s.slice(0, 1500)}... (${s.length} characters)` : s;
};

function ajvErrors(errors) {
  const lines = errors.slice(0, 20).map((e) => {
    const params = Object.keys(e.params ?? {}).length ? ` ${JSON.stringify(e.params)}` : '';
    return `  ${e.instancePath || '(body)'}: ${e.message}${params} [${e.schemaPath}]`;
  });
  if (errors.length > 20) lines.push(`  ... and ${errors.length - 20} more`);
  return lines.join('\n');
}

const ERROR_POINTER = '/components/schemas/Error';

// The error body shape, for the answers accepted on any path.
function checkErrorBody(fail, body, code) {
  const v = validatorAt(ERROR_POINTER);
  if (!v(body)) fail(`error body does not match ${ERROR_POINTER}:\n${ajvErrors(v.errors)}`);
  if (body.code !== code) fail(`expected error code ${code}, got ${body.code}`);
}

/**
 * Throws an Error describing the mismatch unless the answer matches the
 * document.  method: HTTP method; path: full URL, or path with or without
 * the /v1/external base (a query is ignored); status: HTTP status; body:
 * the parsed JSON body (null or undefined when empty or not JSON);
 * headers: a fetch Headers object or a plain object; text: the raw body,
 * only used in messages.
 */
export function validateResponse(method, path, status, body, headers, text) {
  const m = String(method).toUpperCase();
  const rel = apiPath(path);
  const route = rel === null ? null : findRoute(rel);
  const label = `${m} ${route ? route.template : (rel ?? path)}`;
  const fail = (why) => {
    throw new Error(`contract: ${label} answered ${status} (${m} ${path}): ${why}\n  body: ${excerpt(body, text)}`);
  };
  const isJson = body !== null && body !== undefined;

  const requestId = headerOf(headers, 'x-request-id');
  if (status >= 200 && !requestId) fail('no X-Request-Id header');
  if (isJson && typeof body === 'object' && !Array.isArray(body) && 'requestId' in body &&
      status >= 400 && body.requestId !== requestId) {
    fail(`requestId ${JSON.stringify(body.requestId)} differs from X-Request-Id ${JSON.stringify(requestId)}`);
  }

  if (m === 'HEAD') return; // no body to check

  // A body over 64 KiB is refused on any path before routing.
  if (status === 400 && isJson && body.code === 'payload_too_large') {
    checkErrorBody(fail, body, 'payload_too_large');
    return;
  }
  if (!route) {
    if (status === 404 && isJson) {
      checkErrorBody(fail, body, 'not_found');
      return;
    }
    fail('the route is not documented in openapi.json');
  }
  const op = route.item[m.toLowerCase()];
  if (!op) {
    if (status === 405 && isJson) {
      checkErrorBody(fail, body, 'method_not_allowed');
      const allow = (headerOf(headers, 'allow') ?? '').split(',').map((s) => s.trim()).filter(Boolean).sort();
      if (allow.join(',') !== [...route.methods].sort().join(',')) {
        fail(`Allow header ${JSON.stringify(headerOf(headers, 'allow'))} does not list the documented methods ${route.methods.join(', ')}`);
      }
      return;
    }
    fail(`method ${m} is not documented for ${route.template} (documented: ${route.methods.join(', ')})`);
  }

  const opPointer = pointerOf('paths', route.template, m.toLowerCase());
  const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => op.responses[k]);
  if (!key) {
    fail(`status ${status} is not documented for ${op.operationId} (documented: ${Object.keys(op.responses).join(', ')})`);
  }
  const [resp, respPointer] = deref(op.responses[key], `${opPointer}/responses/${key}`);

  for (const [name, h] of Object.entries(resp.headers ?? {})) {
    const [hdr, hdrPointer] = deref(h, `${respPointer}/headers/${escapePointer(name)}`);
    const value = headerOf(headers, name);
    if (value === null) {
      if (hdr.required) fail(`required response header ${name} is missing`);
      continue;
    }
    if (hdr.schema) {
      const v = validatorAt(`${hdrPointer}/schema`);
      const typed = hdr.schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
      if (!v(typed)) fail(`header ${name}: ${JSON.stringify(value)} does not match its schema:\n${ajvErrors(v.errors)}`);
    }
  }

  const content = resp.content ?? {};
  const mediaType = Object.keys(content).find((t) => /^application\/([\w.+-]+\+)?json$/.test(t));
  if (!mediaType) {
    if (Object.keys(content).length === 0 && (isJson || (text ?? '') !== '')) fail('a body where none is documented');
    return;
  }
  const contentType = headerOf(headers, 'content-type');
  if (headers && !/^application\/json\b/i.test(contentType ?? '')) fail(`Content-Type is ${JSON.stringify(contentType)}, not application/json`);
  if (!isJson) fail('the body is empty or not JSON');
  const schemaPointer = `${respPointer}/content/${escapePointer(mediaType)}/schema`;
  const v = validatorAt(schemaPointer);
  if (!v(body)) fail(`body does not match openapi.json#${schemaPointer}:\n${ajvErrors(v.errors)}`);
}

/** Throws unless value matches components.schemas[name]. */
export function validateSchema(name, value) {
  if (!openapi.components?.schemas?.[name]) throw new Error(`contract: no schema ${name} in openapi.json`);
  const v = validatorAt(pointerOf('components', 'schemas', name));
  if (!v(value)) {
    throw new Error(`contract: value does not match schema ${name}:\n${ajvErrors(v.errors)}\n  value: ${excerpt(value)}`);
  }
}

/**
 * Lints openapi.json with Redocly CLI (t/node_modules) under t/redocly.yaml.
 * Returns {ok, totals: {errors, warnings, ignored}, problems, report}: ok
 * when there is neither an error nor a warning; report is readable text.
 */
export function lintOpenapi() {
  const cli = join(T_DIR, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
  const r = spawnSync(process.execPath, [
    cli, 'lint', OPENAPI_FILE, '--config', join(T_DIR, 'redocly.yaml'), '--format=json',
  ], {
    encoding: 'utf8',
    timeout: 120000,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  if (r.error) throw r.error;
  let out;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    throw new Error(`redocly lint exited ${r.status} without a JSON report:\n${r.stdout}\n${r.stderr}`);
  }
  const problems = out.problems ?? [];
  const report = problems.map((p) => {
    const where = (p.location ?? []).map((l) => l.pointer).filter(Boolean).join(', ');
    return `${p.severity} ${p.ruleId}: ${p.message}${where ? ` at ${where}` : ''}`;
  }).join('\n');
  const totals = out.totals ?? { errors: 0, warnings: 0, ignored: 0 };
  return { ok: r.status === 0 && totals.errors === 0 && totals.warnings === 0, totals, problems, report };
}
