package main

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kelseyhightower/envconfig"
	"gopkg.in/yaml.v3"

	"github.com/signoff/signoff/bot/httpapi"
)

// The deploy files (configs/deploy, the Dockerfile) are what people run:
// they must parse, and every SIGNOFF_* variable and subcommand they name
// must be one this binary reads and has.

func knownEnv(t *testing.T) map[string]bool {
	t.Helper()
	var b bytes.Buffer
	if err := envconfig.Usagef("signoff", &config{}, &b, `{{range .}}{{usage_key .}}{{"\n"}}{{end}}`); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, k := range strings.Fields(b.String()) {
		known[k] = true
	}
	if !known["SIGNOFF_REDIS_URL"] || !known["SIGNOFF_DATA_DIR"] {
		t.Fatalf("envconfig names = %v: the naming changed", known)
	}
	return known
}

func checkCommand(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no subcommand", where)
		return
	}
	if _, ok := commands[args[0]]; ok {
		return
	}
	t.Errorf("%s: signoff has no subcommand %q", where, args[0])
}

func checkEnv(t *testing.T, where string, known map[string]bool, names []string) {
	t.Helper()
	for _, n := range names {
		if strings.HasPrefix(n, "SIGNOFF_") && !known[n] {
			t.Errorf("%s: %s is not a variable signoff reads", where, n)
		}
	}
}

func readYAMLDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if err != nil {
			if err.Error() == "EOF" {
				return docs
			}
			t.Fatalf("%s is not valid YAML: %v", path, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

func get(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

func strs(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func keys(v any) []string {
	var out []string
	if m, ok := v.(map[string]any); ok {
		for k := range m {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func TestComposeFileNamesWhatExists(t *testing.T) {
	known := knownEnv(t)
	docs := readYAMLDocs(t, filepath.Join("..", "..", "configs", "deploy", "docker-compose.yaml"))
	if len(docs) != 1 {
		t.Fatalf("compose file has %d documents, want 1", len(docs))
	}
	services, _ := get(docs[0], "services").(map[string]any)
	for _, name := range []string{"redis", "signoff-1", "signoff-2", "proxy"} {
		if services[name] == nil {
			t.Fatalf("compose: no service %q (have %v)", name, keys(services))
		}
	}
	redisCmd := strings.Join(strs(get(services, "redis", "command")), " ")
	if !strings.Contains(redisCmd, "--requirepass") || !strings.Contains(redisCmd, "--appendonly yes") {
		t.Errorf("compose: redis command %q, want a password and AOF persistence", redisCmd)
	}
	replicas := 0
	for name, s := range services {
		if get(s, "image") != "signoff:local" {
			continue
		}
		where := "compose service " + name
		args := strs(get(s, "command"))
		if ep := strs(get(s, "entrypoint")); len(ep) > 0 && ep[0] != "/usr/local/bin/signoff" {
			t.Errorf("%s: entrypoint %v is not the signoff binary", where, ep)
		}
		checkCommand(t, where, args)
		env := keys(get(s, "environment"))
		checkEnv(t, where, known, env)
		if len(args) > 0 && args[0] == "serve" {
			replicas++
			for _, want := range []string{"SIGNOFF_REDIS_URL", "SIGNOFF_NOSTR_KEY", "SIGNOFF_TOKEN_SECRET", "SIGNOFF_REQUIRE_TOKENS"} {
				if !slices.Contains(env, want) {
					t.Errorf("%s: %s is not set (replicas must share it)", where, want)
				}
			}
			vols := strings.Join(strs(get(s, "volumes")), " ")
			if !strings.Contains(vols, ":/home/nonroot/signoff") {
				t.Errorf("%s: the data dir is not on a volume: %v", where, vols)
			}
			url, _ := get(s, "environment", "SIGNOFF_REDIS_URL").(string)
			if !strings.Contains(url, ":${REDIS_PASSWORD") {
				t.Errorf("%s: SIGNOFF_REDIS_URL %q carries no password", where, url)
			}
			// The proxy reaches the replicas by name: that name must be a Host they serve.
			proxyURL, _ := get(services, "proxy", "environment", "SIGNOFF_URL").(string)
			checkServes(t, where, get(s, "environment", "SIGNOFF_ALLOWED_HOSTS"), proxyURL)
		}
	}
	if replicas != 2 {
		t.Errorf("compose: %d serve replicas, want 2", replicas)
	}
}

func TestKubernetesExampleNamesWhatExists(t *testing.T) {
	known := knownEnv(t)
	docs := readYAMLDocs(t, filepath.Join("..", "..", "configs", "deploy", "kubernetes", "signoff.yaml"))
	byKind := map[string]map[string]any{}
	for _, d := range docs {
		kind, _ := d["kind"].(string)
		name, _ := get(d, "metadata", "name").(string)
		if kind == "" || name == "" {
			t.Fatalf("a document without kind or name: %v", d)
		}
		byKind[kind+"/"+name] = d
	}
	secret := byKind["Secret/signoff"]
	dep := byKind["Deployment/signoff"]
	if secret == nil || dep == nil || byKind["Service/signoff"] == nil {
		t.Fatalf("want Secret, Deployment and Service signoff; have %v", keys(anyMap(byKind)))
	}
	secretKeys := keys(get(secret, "stringData"))
	containers, _ := get(dep, "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("deployment has %d containers, want 1", len(containers))
	}
	c := containers[0]
	checkCommand(t, "deployment args", strs(get(c, "args")))
	var env []string
	for _, e := range get(c, "env").([]any) {
		name, _ := get(e, "name").(string)
		env = append(env, name)
		if ref, ok := get(e, "valueFrom", "secretKeyRef", "key").(string); ok && !slices.Contains(secretKeys, ref) {
			t.Errorf("env %s reads Secret key %q, which the Secret does not have (%v)", name, ref, secretKeys)
		}
	}
	checkEnv(t, "deployment env", known, env)
	checkEnv(t, "secret keys", known, secretKeys)
	var allowed any
	for _, e := range get(c, "env").([]any) {
		if get(e, "name") == "SIGNOFF_ALLOWED_HOSTS" {
			allowed = get(e, "value")
		}
	}
	checkServes(t, "deployment", allowed, "http://signoff:8080", "http://signoff.signoff.svc.cluster.local:8080")
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got := get(c, probe, "httpGet", "path"); got != path {
			t.Errorf("%s path = %v, want %s", probe, got, path)
		}
	}
	checkKubernetesWiring(t, byKind, c)
	mounted := false
	for _, m := range get(c, "volumeMounts").([]any) {
		if get(m, "mountPath") == "/home/nonroot/signoff" {
			mounted = true
		}
	}
	if !mounted {
		t.Error("the data dir /home/nonroot/signoff is not on a volume")
	}
}

// checkServes fails unless a gateway with SIGNOFF_ALLOWED_HOSTS = allowed
// serves a call to each of urls (their Host).
func checkServes(t *testing.T, where string, allowed any, urls ...string) {
	t.Helper()
	list, _ := allowed.(string)
	hosts, err := httpapi.ParseHosts(list)
	if err != nil {
		t.Errorf("%s: SIGNOFF_ALLOWED_HOSTS %v: %v", where, allowed, err)
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			t.Errorf("%s: %q is not a URL", where, raw)
			continue
		}
		if !(&httpapi.Server{AllowedHosts: hosts}).ServesHost(u.Host) {
			t.Errorf("%s: SIGNOFF_ALLOWED_HOSTS %v does not serve %s: calls to %s would get 421", where, allowed, u.Host, raw)
		}
	}
}

func anyMap(m map[string]map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The probes' paths answer on the real gateway, without a token.
func TestProbePathsAnswer(t *testing.T) {
	gateway(t, demoPersona)
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(os.Getenv("SIGNOFF_URL") + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, res.StatusCode)
		}
	}
}

var dockerInstr = regexp.MustCompile(`^(ENV|VOLUME|HEALTHCHECK|CMD|ENTRYPOINT)\s+(.*)$`)

func TestDockerfileNamesWhatExists(t *testing.T) {
	known := knownEnv(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Join continued lines, then read the final stage's instructions.
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	stages := strings.Split(text, "\nFROM ")
	final := stages[len(stages)-1]
	env := map[string]string{}
	var volume, health, cmd string
	sc := bufio.NewScanner(strings.NewReader(final))
	for sc.Scan() {
		m := dockerInstr.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		switch m[1] {
		case "ENV":
			for _, kv := range strings.Fields(m[2]) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					env[k] = v
				}
			}
		case "VOLUME":
			volume = m[2]
		case "HEALTHCHECK":
			health = m[2]
		case "CMD":
			cmd = m[2]
		}
	}
	var names []string
	for k := range env {
		names = append(names, k)
	}
	checkEnv(t, "Dockerfile ENV", known, names)
	if env["SIGNOFF_DATA_DIR"] == "" || !strings.Contains(volume, `"`+env["SIGNOFF_DATA_DIR"]+`"`) {
		t.Errorf("VOLUME %q does not hold SIGNOFF_DATA_DIR %q", volume, env["SIGNOFF_DATA_DIR"])
	}
	_, hc, ok := strings.Cut(health, "CMD ")
	var hargs []string
	if ok {
		if err := yaml.Unmarshal([]byte(hc), &hargs); err != nil || len(hargs) < 2 || hargs[0] != "/usr/local/bin/signoff" {
			t.Fatalf("HEALTHCHECK %q: want CMD [\"/usr/local/bin/signoff\", …] (no shell in distroless)", health)
		}
		checkCommand(t, "HEALTHCHECK", hargs[1:])
	} else {
		t.Fatal("the Dockerfile has no HEALTHCHECK CMD")
	}
	var cargs []string
	if err := yaml.Unmarshal([]byte(cmd), &cargs); err != nil {
		t.Fatalf("CMD %q is not an exec-form list: %v", cmd, err)
	}
	checkCommand(t, "CMD", cargs)
}

// dockerIgnored reports whether .dockerignore's patterns leave the file at
// rel (slash-separated, from the repository root) out of the build
// context: a `**/NAME` pattern matches NAME at any depth, any other
// pattern the path from the root or a parent dir of it (Docker's rules,
// less `!` exceptions, which the file must not use for this to hold).
func dockerIgnored(t *testing.T, patterns []string, rel string) bool {
	t.Helper()
	parts := strings.Split(rel, "/")
	for _, p := range patterns {
		if strings.HasPrefix(p, "!") {
			t.Fatalf(".dockerignore has an exception %q: dockerIgnored does not follow those", p)
		}
		p = strings.TrimPrefix(p, "/")
		for i := range parts {
			var ok bool
			if name, deep := strings.CutPrefix(p, "**/"); deep {
				ok, _ = filepath.Match(name, strings.Join(parts[i:], "/"))
			} else {
				ok, _ = filepath.Match(p, strings.Join(parts[:i+1], "/"))
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// Every file serve keeps in its data dir (keys, token secret, audit log
// and its checkpoint, …) stays out of the image's build context if a data
// dir is left inside the tree: a `docker build .` must not copy the gateway
// key into a layer.
func TestDockerignoreKeepsDataDirOut(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	gateway(t, demoPersona) // its first token (audited) closes the API: tokens.closed too
	dataDir := os.Getenv("SIGNOFF_DATA_DIR")
	var files []string
	filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dataDir, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	t.Logf("data dir: %v", files)
	// Written on the audit log's first checkpoint (an interval or exit).
	files = append(files, "audit.jsonl.checkpoint")
	if len(files) < 3 {
		t.Fatalf("data dir %s holds %v: serve wrote less than expected", dataDir, files)
	}
	for _, f := range files {
		for _, rel := range []string{f, "data/" + f, "cmd/signoff/data/" + f} {
			if !dockerIgnored(t, patterns, rel) {
				t.Errorf(".dockerignore lets %s (a file serve keeps in its data dir) into the build context", rel)
			}
		}
	}
	for _, rel := range []string{".git/config", ".env", "configs/deploy/.env", "bot/.env", "signoff", "cmd/signoff/signoff", "cpu.prof"} {
		if !dockerIgnored(t, patterns, rel) {
			t.Errorf(".dockerignore lets %s into the build context", rel)
		}
	}
	for _, rel := range []string{"go.mod", "cmd/signoff/main.go", "configs/personas/demo.yaml", "configs/rules/core.yaml"} {
		if dockerIgnored(t, patterns, rel) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", rel)
		}
	}
}

// checkKubernetesWiring follows the example's references the API server
// would not check: every Secret key a workload reads exists, probes and
// Services reach the port serve listens on, selectors pick the pods, and
// the Redis URL names the Redis Service with REDIS_PASSWORD's value.
func checkKubernetesWiring(t *testing.T, byKind map[string]map[string]any, gw any) {
	secret := byKind["Secret/signoff"]
	secretData, _ := get(secret, "stringData").(map[string]any)
	workloads := map[string]map[string]any{}
	for name, d := range byKind {
		if strings.HasPrefix(name, "Deployment/") || strings.HasPrefix(name, "StatefulSet/") {
			workloads[name] = d
		}
	}
	if workloads["StatefulSet/signoff-redis"] == nil || byKind["Service/signoff-redis"] == nil {
		t.Fatalf("want a StatefulSet and a Service signoff-redis; have %v", keys(anyMap(byKind)))
	}
	// containerPort of a probe's or Service's port (a name or a number).
	portOf := func(c any, p any) (int, bool) {
		for _, cp := range get(c, "ports").([]any) {
			n, _ := get(cp, "containerPort").(int)
			if get(cp, "name") == p || p == n {
				return n, true
			}
		}
		return 0, false
	}
	for wname, w := range workloads {
		tmplLabels, _ := get(w, "spec", "template", "metadata", "labels").(map[string]any)
		for k, v := range get(w, "spec", "selector", "matchLabels").(map[string]any) {
			if tmplLabels[k] != v {
				t.Errorf("%s: selector %s=%v does not pick its own pods (labels %v)", wname, k, v, tmplLabels)
			}
		}
		for _, c := range get(w, "spec", "template", "spec", "containers").([]any) {
			for _, e := range get(c, "env").([]any) {
				ref := get(e, "valueFrom", "secretKeyRef")
				if ref == nil {
					continue
				}
				if get(ref, "name") != "signoff" {
					t.Errorf("%s: env %v reads Secret %v, not signoff", wname, get(e, "name"), get(ref, "name"))
				}
				if k, _ := get(ref, "key").(string); secretData[k] == nil {
					t.Errorf("%s: env %v reads Secret key %q, which the Secret does not have (%v)", wname, get(e, "name"), k, keys(secretData))
				}
			}
		}
	}
	// serve's port: SIGNOFF_LISTEN's, which the probes and the Service must reach.
	listen := ""
	for _, e := range get(gw, "env").([]any) {
		if get(e, "name") == "SIGNOFF_LISTEN" {
			listen, _ = get(e, "value").(string)
		}
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("deployment: SIGNOFF_LISTEN %q: %v", listen, err)
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		p := get(gw, probe, "httpGet", "port")
		if n, ok := portOf(gw, p); !ok || strconv.Itoa(n) != port {
			t.Errorf("%s port %v is container port %d, but serve listens on %s", probe, p, n, listen)
		}
	}
	for _, svc := range []struct{ service, workload string }{{"Service/signoff", "Deployment/signoff"}, {"Service/signoff-redis", "StatefulSet/signoff-redis"}} {
		s, w := byKind[svc.service], workloads[svc.workload]
		tmplLabels, _ := get(w, "spec", "template", "metadata", "labels").(map[string]any)
		for k, v := range get(s, "spec", "selector").(map[string]any) {
			if tmplLabels[k] != v {
				t.Errorf("%s: selector %s=%v picks no pod of %s (labels %v)", svc.service, k, v, svc.workload, tmplLabels)
			}
		}
		c := get(w, "spec", "template", "spec", "containers").([]any)[0]
		for _, sp := range get(s, "spec", "ports").([]any) {
			if _, ok := portOf(c, get(sp, "targetPort")); !ok {
				t.Errorf("%s: targetPort %v is no port of %s", svc.service, get(sp, "targetPort"), svc.workload)
			}
		}
	}
	if n, ok := portOf(gw, "http"); !ok || strconv.Itoa(n) != port {
		t.Errorf("deployment: container port http = %d, but serve listens on %s", n, listen)
	}
	raw, _ := secretData["SIGNOFF_REDIS_URL"].(string)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("Secret SIGNOFF_REDIS_URL %q: %v", raw, err)
	}
	redisPort := get(byKind["Service/signoff-redis"], "spec", "ports").([]any)[0]
	if u.Hostname() != "signoff-redis" || u.Port() != strconv.Itoa(get(redisPort, "port").(int)) {
		t.Errorf("Secret SIGNOFF_REDIS_URL %q does not name the Service signoff-redis on port %v", raw, get(redisPort, "port"))
	}
	if pw, _ := u.User.Password(); pw == "" || pw != secretData["REDIS_PASSWORD"] {
		t.Errorf("Secret SIGNOFF_REDIS_URL's password %q is not REDIS_PASSWORD %q", pw, secretData["REDIS_PASSWORD"])
	}
	redisArgs := strings.Join(strs(get(workloads["StatefulSet/signoff-redis"], "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["args"]), " ")
	if !strings.Contains(redisArgs, "--requirepass $(REDIS_PASSWORD)") || !strings.Contains(redisArgs, "--appendonly yes") {
		t.Errorf("redis args %q: want --requirepass $(REDIS_PASSWORD) and --appendonly yes", redisArgs)
	}
}

// TestKubernetesDeployIsUsable: the readiness probe does not take a pod
// out on one slow answer, and the personas ConfigMap is built from
// personas the person owns (init's), not the ownerless example.
func TestKubernetesDeployIsUsable(t *testing.T) {
	path := filepath.Join("..", "..", "configs", "deploy", "kubernetes", "signoff.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "--from-file=configs/personas") || !strings.Contains(string(raw), "--from-file=$HOME/.config/signoff/personas") {
		t.Error("the personas ConfigMap is built from the ownerless example, not the persona init wrote")
	}
	for _, d := range readYAMLDocs(t, path) {
		if get(d, "kind") != "Deployment" {
			continue
		}
		c := get(d, "spec", "template", "spec", "containers").([]any)[0]
		n, _ := get(c, "readinessProbe", "failureThreshold").(int)
		if n < 2 {
			t.Errorf("readinessProbe failureThreshold = %d: one slow answer takes the pod out (flapping)", n)
		}
	}
}

// TestDeployFilesCarryThePinSteps: wherever a gateway runs in a container,
// the file says how a client pins its key.
func TestDeployFilesCarryThePinSteps(t *testing.T) {
	for _, f := range []string{"Dockerfile", "configs/deploy/docker-compose.yaml", "configs/deploy/kubernetes/signoff.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"SIGNOFF_GATEWAY_KEY=npub1", "gateway.pub", "grep 'gateway key'"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks the pin step %q", f, want)
			}
		}
	}
}
