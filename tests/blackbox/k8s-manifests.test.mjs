// The Kubernetes manifests (deploy/kubernetes/mcp-execd.yaml, issue 19.6; agent-sandbox.yaml, issue 34.4) against the Kubernetes
// API schemas (npm kubernetes-models 5.1.0: each object's JSON schema from the API's OpenAPI
// document, checked with ajv). Described and checked, not run on a cluster. The schemas allow
// unknown fields, so what the isolation rests on is also asserted field by field (a misspelt
// `hostUsers` would pass the schema and leave the pod in the host's user namespace).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Service } from 'kubernetes-models/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
// kubernetes-models' own validator: ajv with the Kubernetes formats (for the agent-sandbox CRDs below).
import Ajv from 'ajv';
import { formats, runValidateFunc } from '@kubernetes-models/validate';

const here = path.dirname(fileURLToPath(import.meta.url));
const FILE = path.resolve(here, '../../deploy/kubernetes/mcp-execd.yaml');
const MODELS = { Deployment, Service, NetworkPolicy, PodDisruptionBudget };

function load() {
    const docs = YAML.parseAllDocuments(fs.readFileSync(FILE, 'utf8'));
    for (const d of docs) assert.deepEqual(d.errors, [], 'YAML errors');
    return docs.map((d) => d.toJS());
}

test('k8s: every object validates against its API schema, and the four kinds are there', () => {
    const docs = load();
    assert.deepEqual(docs.map((d) => d.kind).sort(), ['Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'Service']);
    for (const d of docs) {
        const Model = MODELS[d.kind];
        assert.ok(Model, `no model for ${d.kind}`);
        assert.doesNotThrow(() => new Model(d).validate(), `${d.kind} does not validate`);
    }
});

test('k8s: the validator refuses what the API would (it can fail)', () => {
    const dep = load().find((d) => d.kind === 'Deployment');
    const bad = structuredClone(dep);
    bad.spec.replicas = 'three';
    assert.throws(() => new Deployment(bad).validate(), /replicas/);
    const bad2 = structuredClone(dep);
    bad2.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    assert.throws(() => new Deployment(bad2).validate(), /containerPort/);
});

test('k8s: isolation as docs/fleet.md says: no privileged container, user namespaces, capabilities, no egress', () => {
    const docs = load();
    const dep = docs.find((d) => d.kind === 'Deployment');
    const pod = dep.spec.template.spec;
    assert.equal(pod.hostUsers, false, 'the pod has a user namespace of its own');
    assert.equal(pod.automountServiceAccountToken, false);
    const [c] = pod.containers;
    const sc = c.securityContext;
    assert.equal(sc.privileged, false);
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.equal(sc.readOnlyRootFilesystem, true);
    assert.deepEqual(sc.capabilities, { drop: ['ALL'], add: ['SETUID', 'SETGID', 'CHOWN'] });
    assert.equal(sc.procMount, 'Unmasked');
    // podman kube play reads the profile only from the annotation; Kubernetes 1.19-1.26 refuse a
    // pod whose annotation and field disagree.
    assert.deepEqual(pod.securityContext.seccompProfile, { type: 'Unconfined' });
    assert.equal(dep.spec.template.metadata.annotations?.['seccomp.security.alpha.kubernetes.io/pod'], 'unconfined');
    const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]));
    // auto: the container's cgroup where it can be written, else rlimits (an explicit cgroupfs
    // that is not available refuses to start, which the comment says is the other choice).
    assert.equal(env.MCP_EXEC_CGROUP, 'auto');
    assert.equal(env.MCP_EXEC_REQUIRE_CGROUP, '0');
    assert.equal(env.MCP_EXEC_TRANSPORT, 'http');
    // The root filesystem is read-only (so is /tmp): the daemon's staging goes to
    // RUNTIME_DIRECTORY, which must be a writable volume (podman kube play found it missing).
    const rt = c.volumeMounts.find((v) => v.mountPath === env.RUNTIME_DIRECTORY);
    assert.ok(rt && !rt.readOnly, `no writable volume at RUNTIME_DIRECTORY=${env.RUNTIME_DIRECTORY}`);
    assert.ok(pod.volumes.find((v) => v.name === rt.name).emptyDir);
    assert.ok(Number(env.MCP_EXEC_DRAIN_S) < pod.terminationGracePeriodSeconds, 'the drain fits the grace period');
    assert.equal(c.readinessProbe.httpGet.path, '/health');
    assert.ok(!('MCP_EXEC_AUTH_TOKEN' in env), 'the token is a file, never an environment variable');
    // The tenants file comes from a Secret, mode 0400, at the path MCP_EXEC_TENANTS names.
    const mount = c.volumeMounts.find((v) => env.MCP_EXEC_TENANTS?.startsWith(v.mountPath + '/'));
    assert.ok(mount, `no volume holds MCP_EXEC_TENANTS=${env.MCP_EXEC_TENANTS}`);
    const vol = pod.volumes.find((v) => v.name === mount.name);
    assert.equal(vol.secret?.defaultMode, 0o400, 'the tenants file is readable by its owner only (the daemon refuses others)');
    // The token's too (YAML 1.2 reads "0400" as decimal 400, i.e. 0620: written as 256).
    assert.equal(pod.volumes.find((v) => v.name === 'token').secret?.defaultMode, 0o400);
    assert.equal(env.MCP_EXEC_TENANTS.slice(mount.mountPath.length + 1), vol.secret.items?.[0]?.path ?? 'tenants');
    const np = docs.find((d) => d.kind === 'NetworkPolicy');
    assert.ok(np.spec.policyTypes.includes('Egress'));
    assert.deepEqual(np.spec.egress, [], 'every egress denied');
    assert.deepEqual(np.spec.podSelector.matchLabels, dep.spec.selector.matchLabels);
    const pdb = docs.find((d) => d.kind === 'PodDisruptionBudget');
    assert.deepEqual(pdb.spec.selector.matchLabels, dep.spec.selector.matchLabels);
    const svc = docs.find((d) => d.kind === 'Service');
    assert.deepEqual(svc.spec.selector, dep.spec.selector.matchLabels);
});

// ---- deploy/kubernetes/agent-sandbox.yaml: kubernetes-sigs/agent-sandbox's custom resources ----
// Checked against the CRDs of a pinned release (tests/fixtures/agent-sandbox-v0.5.6/, copied from
// the tag; its README names the commit), with the validator kubernetes-models uses (ajv and the
// Kubernetes formats of @kubernetes-models/validate). A CRD's schema lets unknown fields through
// (the API server prunes them silently), so every object schema that lists its properties and
// does not preserve unknown fields is closed first: an unknown field is refused, as
// `kubectl apply --validate=strict` refuses it.
const SANDBOX_FILE = path.resolve(here, '../../deploy/kubernetes/agent-sandbox.yaml');
const CRD_DIR = path.resolve(here, '../fixtures/agent-sandbox-v0.5.6');

function closed(schema) {
    if (Array.isArray(schema)) return schema.map(closed);
    if (schema === null || typeof schema !== 'object') return schema;
    const out = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, closed(v)]));
    if (out.properties && !('additionalProperties' in out) && !out['x-kubernetes-preserve-unknown-fields'])
        out.additionalProperties = false;
    return out;
}

/** kind -> { apiVersion -> validate function }, from the fixture CRDs; each schema is compiled
 * the first time it is used (the template's holds a whole pod spec: seconds on a loaded machine). */
let validatorsMemo;
function crdValidators() {
    if (validatorsMemo) return validatorsMemo;
    const ajv = new Ajv({ strict: false, allErrors: true });
    for (const [name, format] of Object.entries(formats)) ajv.addFormat(name, format);
    const byKind = {};
    for (const f of fs.readdirSync(CRD_DIR).filter((n) => n.endsWith('.yaml'))) {
        const crd = YAML.parse(fs.readFileSync(path.join(CRD_DIR, f), 'utf8'));
        assert.equal(crd.kind, 'CustomResourceDefinition', f);
        const versions = byKind[crd.spec.names.kind] ??= {};
        for (const v of crd.spec.versions) {
            let fn;
            Object.defineProperty(versions, `${crd.spec.group}/${v.name}`, {
                enumerable: true,
                get: () => (fn ??= ajv.compile(closed(v.schema.openAPIV3Schema))),
            });
        }
    }
    return (validatorsMemo = byKind);
}

function sandboxDocs() {
    const docs = YAML.parseAllDocuments(fs.readFileSync(SANDBOX_FILE, 'utf8'));
    for (const d of docs) assert.deepEqual(d.errors, [], 'YAML errors');
    return docs.map((d) => d.toJS());
}

function validateCR(validators, obj) {
    const fn = validators[obj.kind]?.[obj.apiVersion];
    assert.ok(fn, `no CRD for ${obj.kind} ${obj.apiVersion}`);
    runValidateFunc(fn, obj);
}

test('agent-sandbox: the template, warm pool and claim validate against the CRDs of v0.5.6, unknown fields refused', () => {
    const validators = crdValidators();
    assert.deepEqual(Object.keys(validators).sort(), ['SandboxClaim', 'SandboxTemplate', 'SandboxWarmPool']);
    const docs = sandboxDocs();
    assert.deepEqual(docs.map((d) => d.kind), ['SandboxTemplate', 'SandboxWarmPool', 'SandboxClaim']);
    for (const d of docs) assert.doesNotThrow(() => validateCR(validators, d), `${d.kind} does not validate`);
    // The references hold together: the pool names the template, the claim the pool.
    const [tpl, pool, claim] = docs;
    assert.equal(pool.spec.sandboxTemplateRef.name, tpl.metadata.name);
    assert.equal(claim.spec.warmPoolRef.name, pool.metadata.name);
});

test('agent-sandbox: the validator refuses a misspelt field, a wrong type and a value outside an enum (it can fail)', () => {
    const validators = crdValidators();
    const [tpl, pool, claim] = sandboxDocs();
    const t1 = structuredClone(tpl);
    t1.spec.podTemplate.spec.hostUser = false;   // hostUsers misspelt: pruned by the API server, refused here
    assert.throws(() => validateCR(validators, t1), /additional properties/);
    const t2 = structuredClone(tpl);
    t2.spec.podTemplate.spec.containers[0].securityContext.capabilities.add = 'SETUID';
    assert.throws(() => validateCR(validators, t2), /must be array/);
    const p = structuredClone(pool);
    p.spec.replicas = 'two';
    assert.throws(() => validateCR(validators, p), /must be integer/);
    const c = structuredClone(claim);
    c.spec.lifecycle.shutdownPolicy = 'Remove';
    assert.throws(() => validateCR(validators, c), /allowed values/);
});

test('agent-sandbox: the sandbox\'s pod is isolated as the Deployment\'s is, and has no egress', () => {
    const dep = load().find((d) => d.kind === 'Deployment').spec.template.spec;
    const [tpl] = sandboxDocs();
    const pod = tpl.spec.podTemplate.spec;
    for (const k of ['hostUsers', 'automountServiceAccountToken', 'securityContext', 'terminationGracePeriodSeconds'])
        assert.deepEqual(pod[k], dep[k], k);
    const [c] = pod.containers, [dc] = dep.containers;
    assert.deepEqual(c.securityContext, dc.securityContext);
    assert.deepEqual(c.readinessProbe, dc.readinessProbe);
    const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]));
    const denv = Object.fromEntries(dc.env.map((e) => [e.name, e.value]));
    for (const k of ['MCP_EXEC_CGROUP', 'MCP_EXEC_REQUIRE_CGROUP', 'MCP_EXEC_TRANSPORT', 'MCP_EXEC_DRAIN_S', 'RUNTIME_DIRECTORY'])
        assert.equal(env[k], denv[k], k);
    assert.ok(!('MCP_EXEC_AUTH_TOKEN' in env), 'the token is a file, never an environment variable');
    assert.equal(pod.volumes.find((v) => v.name === 'token').secret?.defaultMode, 0o400);
    assert.equal(tpl.spec.networkPolicyManagement, 'Managed');
    assert.deepEqual(tpl.spec.networkPolicy.egress, [], 'every egress denied (the controller\'s default allows the Internet)');
    assert.equal(tpl.spec.envVarsInjectionPolicy, 'Disallowed');
});
