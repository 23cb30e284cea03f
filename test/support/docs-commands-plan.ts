import type { DocsCommand } from './docs-commands.js'
import type { ResourceKind } from './docs-resources.js'

/**
 * The docs' commands that test/packaging/docs-commands.test.ts does not run, keyed by file and command
 * text (commandKey: spaces collapsed, the trailing comment cut), each with why it cannot run
 * there and what runs it instead. A docs command in neither this list nor the run fails the
 * test, and so does an entry no docs command matches any more.
 */
export const EXCLUDED: Record<string, string> = {
  'README.md: npm install && npm start':
    'the test serves every command with `npm start` in the checkout; `npm install` is CI’s `npm ci` in its clean clone',
  'README.md: npm test':
    '.ci/run runs it from a clean clone; inside the suite it would run the suite',
  'README.md: npm install -g ./podyard-0.1.0.tgz':
    'test/packaging/package-install.test.ts packs and installs the tarball (PODYARD_TEST_PACKAGE)',
  'README.md: npx ./podyard-0.1.0.tgz serve':
    'test/packaging/package-install.test.ts runs the tarball with npx in a fresh folder (--version, --help) and serves from the installed tarball (PODYARD_TEST_PACKAGE)',
  'README.md: npm install ./podyard-worker-0.1.0.tgz':
    'test/packaging/package-install.test.ts installs the SDK’s tarball beside a handler (PODYARD_TEST_PACKAGE)',
  'docs/api.md: npx openapi-typescript http://localhost:8080/v2/openapi.json -o podyard-api.d.ts':
    'npx fetches the generator from the npm registry; test/api/openapi-client.test.ts runs it on the document',
  'docs/api.md: npx @hey-api/openapi-ts -i http://localhost:8080/v2/openapi.json -o src/podyard -c @hey-api/client-fetch':
    'npx fetches the generator from the npm registry; test/api/openapi-client.test.ts runs it on the document',
  'docs/cli.md: podyard hosts add cpu-node-3 --data-center EU-RO-1 --cpu-flavors cpu3c,cpu3g --vcpus 32 --memory-gb 128 --docker-url ssh://podyard@cpu-node-3 --ssh-key /etc/podyard/ssh/id_ed25519 --known-hosts /etc/podyard/ssh/known_hosts':
    'needs a Docker host over SSH and its key files in /etc/podyard/ssh; test/fleet/multi-host-rig.test.ts adds hosts over SSH',
  'docs/cli.md: podyard completion zsh > "${fpath[1]}/_podyard"':
    'zsh’s syntax, and it writes into zsh’s system function folder; test/cli/cli-completion.test.ts loads the script in zsh',
  'docs/cli.md: podyard migrate --init --store-url postgres://podyard:...@db/podyard':
    'the example’s database host; test/cli/cli.test.ts migrates a fresh PostgreSQL database (PODYARD_TEST_POSTGRES_URL)',
  'docs/console.md: npm run build:console':
    'rebuilds dist/console of the checkout under the suites running beside it; `npm ci` in CI runs it',
  'docs/console.md: npm run console:dev':
    'a console developer’s server on the fixed port 5173, until stopped; test/console/ tests the console',
  'docs/dev.md: pip install runpod': 'installs from PyPI: the tests reach no network',
  'docs/development.md: apt-get install -y postgresql && pg_ctlcluster 15 main start':
    'installs system packages; .ci/run sets PostgreSQL up the same way',
  'docs/development.md: su postgres -c "psql -c \\"create role podyard login superuser password \'podyard\'\\""':
    '.ci/run creates the role',
  'docs/development.md: su postgres -c "createdb -O podyard podyard_test"':
    '.ci/run creates the database',
  'docs/development.md: PODYARD_TEST_POSTGRES_URL=postgres://podyard:podyard@127.0.0.1:5432/podyard_test npm test':
    '.ci/run runs the suite with this variable',
  "docs/development.md: unshare -m sh -c 'mount --bind /dev/null /usr/bin/bwrap && npx vitest run test/pods/pods-api'":
    'a suite run without bubblewrap, in the checkout; not inside the suite',
  'docs/development.md: PODYARD_TEST_FUZZ=1 npx vitest run test/fuzz/':
    '.ci/run runs the fuzz suite',
  'docs/development.md: PODYARD_TEST_FUZZ=1 PODYARD_FUZZ_SEED=1234 npx vitest run test/fuzz/':
    'the fuzz suite, replayed; .ci/run runs it with a fresh seed',
  'docs/development.md: sudo bash test/support/multi-host-rig.sh up': '.ci/run brings the rig up',
  'docs/development.md: sudo bash test/support/multi-host-rig.sh status':
    'the rig’s state, when .ci/run has it up; the rig belongs to the multi-host suites',
  'docs/development.md: sudo PODYARD_TEST_MULTIHOST=1 npx vitest run test/fleet/multi-host-rig.test.ts':
    '.ci/run runs the multi-host suites',
  'docs/development.md: PATH=/run/pyd-rig/bin:$PATH DOCKER_HOST=ssh://podyard-rig@10.213.0.11 docker ps':
    'the rig’s engine over SSH: test/fleet/multi-host-rig.test.ts reaches it',
  'docs/development.md: DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=/run/pyd-rig/tls DOCKER_HOST=tcp://10.213.0.13:2376 docker ps':
    'the rig’s engine over TLS: test/fleet/multi-host-rig.test.ts reaches it',
  'docs/development.md: sudo bash test/support/multi-host-rig.sh stop-engine 2':
    'stops an engine the multi-host suites use',
  'docs/development.md: sudo bash test/support/multi-host-rig.sh down':
    '.ci/run takes the rig down',
  'docs/development.md: apt-get install -y chromium': '.ci/run installs it',
  'docs/development.md: apt-get install -y --no-install-recommends qemu-system-x86 linux-image-amd64 busybox-static':
    '.ci/run installs them for its cgroup v2 pass',
  'docs/development.md: bash test/support/cgroup-v2-vm.sh npx vitest run --maxWorkers=1 test/containment/containment-process.test.ts test/containment/containment-disk-write-process.test.ts':
    ".ci/run's cgroup v2 pass runs these files in the VM (about 3 minutes, both cores)",
  'docs/development.md: PODYARD_TEST_BROWSER=1 npx vitest run test/console/':
    '.ci/run runs the browser suite',
  'docs/development.md: PODYARD_UPDATE_SCHEMA_SNAPSHOT=1 PODYARD_TEST_POSTGRES_URL=postgres://... npx vitest run test/platform/schema-snapshot.test.ts':
    'rewrites test/platform/schema-snapshot.json after a migration; test/platform/schema-snapshot.test.ts checks it',
  'docs/fleet.md: podyard hosts add gpu-node-4 --data-center EU-RO-1 --gpu "NVIDIA GeForce RTX 4090" --gpu-count 4 --cuda 12.8 --vcpus 64 --memory-gb 248 --docker-url ssh://podyard@gpu-node-4 --ssh-key /etc/podyard/ssh/id_ed25519 --known-hosts /etc/podyard/ssh/known_hosts':
    'needs a Docker host over SSH and its key files in /etc/podyard/ssh; test/fleet/multi-host-rig.test.ts adds hosts over SSH',
  'docs/fleet.md: podyard hosts add gpu-node-4 --data-center EU-RO-1 --gpu "NVIDIA GeForce RTX 4090" --gpu-count 4 --vcpus 64 --memory-gb 248 --ssh podyard@gpu-node-4 --ssh-key /etc/podyard/ssh/id_ed25519 --known-hosts /etc/podyard/ssh/known_hosts':
    'needs a Docker host over SSH and its key files in /etc/podyard/ssh; test/fleet/multi-host-rig.test.ts adds hosts over SSH',
  'docs/gpus.md: nvidia-smi --query-gpu=index,uuid,pci.bus_id,utilization.gpu,utilization.memory,memory.used, memory.total,temperature.gpu,power.draw,clocks_throttle_reasons.active, ecc.errors.uncorrected.volatile.total,retired_pages.pending --format=csv,noheader,nounits -lms 1000':
    'needs an NVIDIA GPU and its driver; test/gpus/gpu-health.test.ts reads the same query’s output',
  'docs/gpus.md: podyard hosts gpu-reset local 0':
    'needs an NVIDIA GPU on the host; test/gpus/gpu-withdrawals.test.ts resets GPUs through the API',
  'docs/fleet.md: podyard hosts pull registry.internal:5000/team/trainer:2 --host gpu-node-4 --registry-auth <id>':
    "needs the operator's registry (registry.internal) and the host added over SSH above; test/fleet/host-images-docker.test.ts runs hosts pull with a registry auth against Debian's docker-registry on 127.0.0.1",
  'docs/fleet.md: apt-get install -y docker-registry':
    '.ci/run installs it; test/fleet/host-images-docker.test.ts runs the registry it installs',
  'docs/fleet.md: docker tag team/trainer:2 registry.internal:5000/team/trainer:2':
    "needs the image and the registry machine (registry.internal); test/fleet/host-images-docker.test.ts names a test image by Debian's docker-registry on 127.0.0.1, pushes it there and pulls it ahead of time",
  'docs/fleet.md: docker push registry.internal:5000/team/trainer:2':
    "needs the registry machine (registry.internal); test/fleet/host-images-docker.test.ts pushes to Debian's docker-registry on 127.0.0.1",
  'docs/fleet.md: podyard hosts get gpu-node-4':
    'the host the command before it adds over SSH, which cannot run here',
  'docs/fleet.md: podyard hosts images --host gpu-node-4':
    'the host added over SSH above, which cannot run here (a host not in the fleet exits 4: test/cli/cli-exit-codes.test.ts)',
  'docs/job-api.md: python3 handler.py':
    'needs runpod-python (from PyPI: the tests reach no network); the variables before it are set and checked',
  'docs/production.md: install -d /etc/podyard && install -m 0600 deploy/podyard.env /etc/podyard/podyard.env':
    'installs into /etc; test/packaging/deploy-systemd.test.ts checks the unit and its environment file',
  'docs/production.md: install -m 0644 deploy/podyard.service /etc/systemd/system/podyard.service':
    'installs into /etc; test/packaging/deploy-systemd.test.ts checks the unit',
  'docs/production.md: systemctl daemon-reload && systemctl enable --now podyard':
    'needs systemd as the machine’s init',
  'docs/production.md: journalctl -u podyard -f': 'needs systemd’s journal',
  'docs/production.md: npm ci && deploy/build-artefact.sh':
    'rebuilds the checkout’s node_modules; test/packaging/artefact.test.ts runs deploy/build-artefact.sh',
  'docs/production.md: scp podyard-0.1.0-linux-x64.tar.gz gpu-node-4:':
    'needs a remote host over SSH',
  "docs/production.md: ssh gpu-node-4 'tar -xzf podyard-0.1.0-linux-x64.tar.gz && podyard-0.1.0-linux-x64/podyard serve'":
    'needs a remote host over SSH; test/packaging/artefact.test.ts unpacks the artefact and serves from it',
  'docs/production.md: npm ci && deploy/build-image.sh':
    'rebuilds the checkout’s node_modules; test/packaging/deploy-image.test.ts builds the image (PODYARD_TEST_IMAGE_BUILD)',
  'docs/production.md: BASE_IMAGE=podyard-base:bookworm deploy/build-image.sh':
    'test/packaging/deploy-image.test.ts builds the image from that base (PODYARD_TEST_IMAGE_BUILD)',
  'docs/production.md: docker run -d -p 8080:8080 -v podyard:/var/lib/podyard podyard:0.1.0':
    'the fixed port 8080 and a named volume; test/packaging/deploy-image.test.ts runs the image',
  'docs/runtime.md: sudo sysctl -w fs.inotify.max_user_instances=8192':
    'changes a kernel setting of the whole machine; .ci/run sets it the same way before the suites',
  'docs/runtime.md: echo fs.inotify.max_user_instances=8192 | sudo tee /etc/sysctl.d/90-podyard.conf':
    'writes the machine’s boot configuration; .ci/run sets the value for its run instead',
  'docs/runtime.md: iptables -N PODYARD-INPUT; iptables -N PODYARD-FORWARD':
    'changes the machine’s firewall; test/containment/docker-egress-policy.test.ts checks the rules podyard installs',
  'docs/runtime.md: iptables -A PODYARD-INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN':
    'changes the machine’s firewall',
  'docs/runtime.md: iptables -A PODYARD-INPUT -p tcp --dport <port> -j RETURN':
    'changes the machine’s firewall',
  'docs/runtime.md: iptables -A PODYARD-INPUT -j DROP': 'changes the machine’s firewall',
  'docs/runtime.md: iptables -A PODYARD-FORWARD -d 169.254.0.0/16 -j DROP':
    'changes the machine’s firewall',
  'docs/runtime.md: iptables -A PODYARD-FORWARD -j RETURN': 'changes the machine’s firewall',
  'docs/runtime.md: iptables -I INPUT 1 -i pydk+ -j PODYARD-INPUT':
    'changes the machine’s firewall',
  'docs/runtime.md: iptables -I DOCKER-USER 1 -i pydk+ -j PODYARD-FORWARD':
    'changes the machine’s firewall',
  'docs/worker-sdk.md: npm install @podyard/worker':
    'not published yet; the README says how to publish it',
  'docs/worker-sdk.md: npm install ./podyard-worker-0.1.0.tgz':
    'test/packaging/package-install.test.ts installs the SDK’s tarball beside a handler (PODYARD_TEST_PACKAGE)',
  'docs/worker-sdk.md: npm run build && npx tsx examples/echo-worker.ts':
    'rebuilds the checkout under the suites running beside it; test/worker-sdk tests run the SDK’s worker loop',
}

/**
 * Commands that run until stopped: each passes once its output matches (or, given a number of
 * milliseconds, when it is still running then, following), and is then stopped as Ctrl-C would.
 */
export const LONG_RUNNING: Record<string, RegExp | number> = {
  'README.md: npx podyard pods logs <pod id> --follow': 3_000,
  // The banner and its snippets only: the worker needs runpod-python, which the tests cannot
  // install (no network); handler.ts's job runs to COMPLETED below.
  'README.md: npx podyard dev handler.py': /runpod-sdk \(JavaScript\)/,
  'docs/dev.md: podyard dev handler.py': /runpod-sdk \(JavaScript\)/,
  'docs/dev.md: podyard dev handler.ts': /COMPLETED/,
  "docs/production.md: PODYARD_STORE_URL='postgres://podyard:secret@db.internal:5432/podyard' podyard serve":
    /store\s+postgres:\/\/[\s\S]*Stop with Ctrl-C/,
  'docs/serverless-endpoints.md: podyard endpoints worker-logs 4m7x2k9q0a1b2c <worker-id> --follow': 3_000,
}

/**
 * Commands that need a PostgreSQL server: run on a fresh database of PODYARD_TEST_POSTGRES_URL's
 * server when it is set (CI sets it), not run otherwise.
 */
export const NEEDS_POSTGRES: Record<string, string> = {
  "docs/production.md: PODYARD_STORE_URL='postgres://podyard:secret@db.internal:5432/podyard' podyard serve":
    'serves from a fresh database instead of the example’s db.internal',
}

/** Commands the docs show failing on purpose, with the exit code docs/cli.md gives for it. */
export const EXIT_CODES: Record<string, number> = {
  'docs/cli.md: podyard pods create --name x --image y --gpu "RTX 4900"': 2,
  'docs/cli.md: podyard keys list --data-dir ./elsewhere': 2,
}

/** Commands whose documented output is an example of another run, not what this run prints. */
export const OUTPUT_NOT_COMPARED: Record<string, string> = {
  'docs/billing.md: podyard billing pods --bucket hour --start 2026-03-02T10:00:00Z --end 2026-03-02T12:00:00Z':
    'the example account’s pods ran on that day; here the hours have no usage ("No usage.")',
  'docs/billing.md: podyard billing --bucket hour --last 2':
    'the example account had spend in those hours; here they have none ("No spend.")',
  'docs/serverless-endpoints.md: podyard endpoints releases 4m7x2k9q0a1b2c':
    'shows a rollout in progress, after an update; the endpoint here has one version',
}

/** The files the docs' commands read, written into each fresh folder. */
export const DOCS_FIXTURE_FILES = [
  'token.txt',
  'db-pass',
  'input.json',
  'hosts.yaml',
  'handler.py',
  'handler.ts',
  'handler.js',
  'test_input.json',
]

/** An admin's command: the fleet, the store, credits and pools, the admin routes. */
export function runsAsAdmin(command: DocsCommand): boolean {
  if (command.file === 'README.md') return true // its walk-through uses the admin key
  return /\bpodyard (hosts|fleet|pools|credits|accounts|keys)\b|\/v2\/admin\/|\$PODYARD_ADMIN_KEY/.test(
    command.text,
  )
}

const EVERYWHERE: Record<string, ResourceKind> = {
  '<pod id>': 'pod',
  '<pod-id>': 'pod',
  '<template-id>': 'template',
  '<volume-id>': 'volume',
  VOLUME_ID: 'volume',
  TEMPLATE_ID: 'template',
  '<endpoint id>': 'endpoint',
  '<endpoint-id>': 'endpoint',
  '<endpoint_id>': 'endpoint',
  '<worker-id>': 'worker',
  '<job_id>': 'job',
  '<failed_job_id>': 'failed-job',
  '41234': 'pod-port',
  'pyd_...': 'admin-key',
  'dev@example.com': 'user-email',
  'team@example.com': 'team-email',
  acct_8f3k2m1q0z7x5c: 'user-account',
  '<name>': 'name',
}

const PER_FILE: Record<string, Record<string, ResourceKind>> = {
  'docs/pods.md': { ID: 'pod' },
  'docs/templates.md': { ID: 'template' },
  'docs/clusters.md': { ID: 'cluster', NAME: 'name' },
  'docs/serverless-endpoints.md': {
    '4m7x2k9q0a1b2c': 'endpoint',
    '30zmvf89kd': 'serverless-template',
  },
  'docs/registries.md': { clq3v0k8m2x7d1s9f4h6j5n0p: 'registry' },
  'docs/production.md': { 'postgres://podyard:secret@db.internal:5432/podyard': 'postgres-url' },
  // The host the SSH add (excluded) would have added, added over TLS instead.
  'docs/cli.md': { 'cpu-node-3': 'cpu-host' },
}

/** The docs' placeholders and example ids in a file, and what the test puts in their place. */
export function placeholdersOf(file: string): Record<string, ResourceKind> {
  return { ...(PER_FILE[file] ?? {}), ...EVERYWHERE }
}
