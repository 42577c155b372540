// Checks Kubernetes manifests against the schemas bundled in kubernetes-models (core, apps) and
// @kubernetes-models/prometheus-operator (PodMonitor), with no API server.
//   node validate-k8s.mjs FILE...   (multi-document YAML; `kubectl kustomize DIR > FILE` first)
// Exit 1 when a document is invalid, has no schema, or does not parse, or when nothing was
// checked. Limit: the schemas do not reject unknown fields, so a misspelt optional key passes.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const CRD_PACKAGES = { "monitoring.coreos.com": "@kubernetes-models/prometheus-operator" };

async function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const pkg = CRD_PACKAGES[group] ?? "kubernetes-models";
  const path = group ? `${pkg}/${group}/${version}/${kind}` : `${pkg}/${version}/${kind}`;
  try {
    return (await import(path))[kind];
  } catch {
    return undefined;
  }
}

let failed = 0;
let checked = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.log(`${file}: YAML error: ${doc.errors[0].message}`);
      failed++;
      continue;
    }
    const obj = doc.toJS();
    if (!obj) continue;
    const name = `${file}: ${obj.kind}/${obj.metadata?.name}`;
    const Model = await modelFor(obj.apiVersion ?? "", obj.kind ?? "");
    if (!Model) {
      console.log(`${name}: no schema for ${obj.apiVersion} ${obj.kind}`);
      failed++;
      continue;
    }
    try {
      new Model(obj).validate();
      checked++;
      console.log(`${name}: ok`);
    } catch (e) {
      failed++;
      console.log(`${name}: INVALID ${e.message.split("\n").slice(0, 4).join(" | ")}`);
    }
  }
}
console.log(`${checked} passed, ${failed} failed`);
process.exit(failed || checked === 0 ? 1 : 0);
