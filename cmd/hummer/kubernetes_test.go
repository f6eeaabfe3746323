package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/hummer-db/hummer/images/oci"
	"github.com/hummer-db/hummer/session"
)

const manifestDir = "../../deploy/kubernetes"

// manifests are deploy/kubernetes's objects, each decoded strictly: a field
// the Kubernetes type does not have (a typo, a wrong level) fails the test,
// as kubectl apply --validate=strict would.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	claims      map[string]*corev1.PersistentVolumeClaim
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	var kust struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Labels     []struct {
			Pairs map[string]string `json:"pairs"`
		} `json:"labels"`
		Resources []string `json:"resources"`
		Images    []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	data, err := os.ReadFile(filepath.Join(manifestDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			listed = append(listed, filepath.Base(f))
		}
	}
	got := slices.Clone(kust.Resources)
	sort.Strings(got)
	if !slices.Equal(got, listed) {
		t.Errorf("kustomization.yaml lists %v; the directory holds %v", got, listed)
	}
	if len(kust.Images) != 1 || kust.Images[0].Name != "hummer" {
		t.Errorf("kustomization.yaml images: %+v, want the one image hummer", kust.Images)
	}
	m := &manifests{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	for _, name := range kust.Resources {
		data, err := os.ReadFile(filepath.Join(manifestDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			d := &appsv1.Deployment{}
			obj = d
			defer func() { m.deployments[d.Name] = d }()
		case "v1 Service":
			s := &corev1.Service{}
			obj = s
			defer func() { m.services[s.Name] = s }()
		case "v1 ConfigMap":
			c := &corev1.ConfigMap{}
			obj = c
			defer func() { m.configMaps[c.Name] = c }()
		case "v1 PersistentVolumeClaim":
			c := &corev1.PersistentVolumeClaim{}
			obj = c
			defer func() { m.claims[c.Name] = c }()
		default:
			t.Fatalf("%s: %s %s: not a kind this test knows", name, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return m
}

// container returns the one container of a Deployment.
func container(t *testing.T, m *manifests, deployment string) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	d, ok := m.deployments[deployment]
	if !ok {
		t.Fatalf("no Deployment %s", deployment)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment %s: %d containers, want 1", deployment, len(d.Spec.Template.Spec.Containers))
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

// parseArgs expands $(VAR) in a container's args as the kubelet does, with
// env's values (a fieldRef: a pod IP; a Secret or ConfigMap key: a value of
// the key's kind), and parses them with the role's own flag set.
func parseArgs(t *testing.T, c corev1.Container, values map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = values[e.Name]
		if _, ok := values[e.Name]; !ok {
			t.Errorf("container %s: env %s has no test value", c.Name, e.Name)
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	var args []string
	for _, a := range c.Args {
		for _, m := range ref.FindAllStringSubmatch(a, -1) {
			if _, ok := env[m[1]]; !ok {
				t.Errorf("container %s: %s refers to $(%s), which its env does not define", c.Name, a, m[1])
			}
		}
		args = append(args, ref.ReplaceAllStringFunc(a, func(s string) string { return env[s[2:len(s)-1]] }))
	}
	if len(args) == 0 {
		t.Fatalf("container %s has no args", c.Name)
	}
	fs, err := roleFlagSet(args[0])
	if err != nil {
		t.Fatalf("container %s: %v", c.Name, err)
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args[1:]); err != nil {
		t.Fatalf("container %s: hummer %s does not take %q: %v", c.Name, args[0], args[1:], err)
	}
	if fs.NArg() > 0 {
		t.Errorf("container %s: arguments left over: %q", c.Name, fs.Args())
	}
	flags := map[string]string{}
	fs.Visit(func(f *flag.Flag) { flags[f.Name] = f.Value.String() })
	return flags
}

// portOf returns the port of a HOST:PORT flag value.
func portOf(t *testing.T, flagValue string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(flagValue)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%q: not HOST:PORT", flagValue)
	}
	return int32(n)
}

// containerPort returns the container's port of that name.
func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Errorf("container %s has no port %s", c.Name, name)
	return -1
}

// envValues are what the pods' env would hold.
var envValues = map[string]string{
	passwordEnv:             "secret",
	"CHECKPOINT_STORE":      "s3://hummer-checkpoints/cluster?region=us-east-1",
	"CATALOG_STORE":         "s3://hummer-checkpoints/catalog?region=us-east-1",
	"AWS_ACCESS_KEY_ID":     "id",
	"AWS_SECRET_ACCESS_KEY": "key",
	"POD_IP":                "10.1.2.3",
}

// The Secrets the manifests use and the README has the user create.
var secretKeys = map[string][]string{
	"hummer-superuser": {"password"},
	"hummer-tls":       {corev1.TLSCertKey, corev1.TLSPrivateKeyKey},
	"hummer-s3":        {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
}

// TestKubernetesManifests decodes deploy/kubernetes strictly into the
// Kubernetes API's types and checks that what refers to something names what
// is there: Services and probes name container ports, the ports are the ones
// the roles' flags listen on, env comes from the ConfigMap's keys and the
// Secrets' documented keys, the args parse with the binary's own flag sets,
// and the resources are what --slots and --memory say.
func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	jmDep, jm := container(t, m, "hummer-jobmanager")
	tmDep, tm := container(t, m, "hummer-taskmanager")
	svc, ok := m.services["hummer-jobmanager"]
	if !ok {
		t.Fatal("no Service hummer-jobmanager")
	}

	if jmDep.Spec.Replicas == nil || *jmDep.Spec.Replicas != 1 || jmDep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the JobManager: replicas %v, strategy %q; want 1, Recreate (one pod on the data directory)", jmDep.Spec.Replicas, jmDep.Spec.Strategy.Type)
	}
	for _, d := range []*appsv1.Deployment{jmDep, tmDep} {
		for k, v := range d.Spec.Selector.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("Deployment %s: selector %s=%s does not match its pods' labels %v", d.Name, k, v, d.Spec.Template.Labels)
			}
		}
		sc := d.Spec.Template.Spec.SecurityContext
		if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != oci.UID || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("Deployment %s: pods not run as the image's user %d", d.Name, oci.UID)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "hummer" {
			t.Errorf("Deployment %s: image %q, want hummer (kustomization.yaml's images names it)", d.Name, c.Image)
		}
		for path, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
			if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port != intstr.FromString("http") {
				t.Errorf("container %s: want a probe GET %s on port http, got %+v", c.Name, path, probe)
			}
		}
		for _, mount := range c.VolumeMounts {
			found := false
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == mount.Name {
					found = true
					if v.Secret != nil {
						checkSecret(t, v.Secret.SecretName, "")
					}
					if v.PersistentVolumeClaim != nil && m.claims[v.PersistentVolumeClaim.ClaimName] == nil {
						t.Errorf("volume %s: no PersistentVolumeClaim %s", v.Name, v.PersistentVolumeClaim.ClaimName)
					}
				}
			}
			if !found {
				t.Errorf("container %s mounts %s, which the pod does not have", c.Name, mount.Name)
			}
		}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom == nil:
			case e.ValueFrom.SecretKeyRef != nil:
				checkSecret(t, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			case e.ValueFrom.ConfigMapKeyRef != nil:
				r := e.ValueFrom.ConfigMapKeyRef
				if cm := m.configMaps[r.Name]; cm == nil || cm.Data[r.Key] == "" {
					t.Errorf("env %s: ConfigMap %s has no key %s", e.Name, r.Name, r.Key)
				}
			case e.ValueFrom.FieldRef != nil:
				if e.Name != "POD_IP" || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
					t.Errorf("env %s from field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
				}
			}
		}
	}

	// The JobManager: its flags' ports are the container's, the Service's.
	jf := parseArgs(t, jm, envValues)
	for flagName, port := range map[string]string{"pg-addr": "postgresql", "rpc-addr": "rpc", "data-addr": "data", "http-addr": "http"} {
		if v, ok := jf[flagName]; !ok || portOf(t, v) != containerPort(t, jm, port) {
			t.Errorf("jobmanager --%s=%s, container port %s is %d", flagName, v, port, containerPort(t, jm, port))
		}
	}
	for k, v := range svc.Spec.Selector {
		if jmDep.Spec.Template.Labels[k] != v {
			t.Errorf("Service %s selects %s=%s, not the JobManager's pods", svc.Name, k, v)
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort != intstr.FromString(p.Name) || p.Port != containerPort(t, jm, p.Name) {
			t.Errorf("Service port %s: %d -> %s; want the JobManager's port of that name", p.Name, p.Port, p.TargetPort.String())
		}
	}
	if jf["checkpoint-store"] != envValues["CHECKPOINT_STORE"] || jf["catalog-store"] != envValues["CATALOG_STORE"] || jf["data-dir"] == "" {
		t.Errorf("jobmanager --checkpoint-store=%q --catalog-store=%q --data-dir=%q", jf["checkpoint-store"], jf["catalog-store"], jf["data-dir"])
	}
	if !mountedAt(jm, "data", jf["data-dir"]) {
		t.Errorf("the JobManager's --data-dir %s is not the PersistentVolumeClaim's mount", jf["data-dir"])
	}
	if !mountedAt(jm, "tls", filepath.Dir(jf["tls-cert"])) || filepath.Base(jf["tls-cert"]) != corev1.TLSCertKey ||
		!mountedAt(jm, "tls", filepath.Dir(jf["tls-key"])) || filepath.Base(jf["tls-key"]) != corev1.TLSPrivateKeyKey {
		t.Errorf("--tls-cert %s --tls-key %s: not the Secret hummer-tls's keys where it is mounted", jf["tls-cert"], jf["tls-key"])
	}
	checkMemory(t, jm, jf["memory"])

	// The TaskManagers: they reach the JobManager through its Service and
	// advertise the pod IP.
	tf := parseArgs(t, tm, envValues)
	host, port, _ := net.SplitHostPort(tf["jobmanager"])
	if host != svc.Name || port != fmt.Sprint(servicePort(svc, "rpc")) {
		t.Errorf("taskmanager --jobmanager=%s, want the Service %s's rpc port %d", tf["jobmanager"], svc.Name, servicePort(svc, "rpc"))
	}
	if tf["advertise-addr"] != envValues["POD_IP"] {
		t.Errorf("taskmanager --advertise-addr=%s, want $(POD_IP)", tf["advertise-addr"])
	}
	if portOf(t, tf["data-addr"]) != containerPort(t, tm, "data") || portOf(t, tf["http-addr"]) != containerPort(t, tm, "http") {
		t.Errorf("taskmanager --data-addr=%s --http-addr=%s: not the container's ports", tf["data-addr"], tf["http-addr"])
	}
	slots, err := strconv.Atoi(tf["slots"])
	if err != nil || slots < 1 {
		t.Fatalf("taskmanager --slots=%q", tf["slots"])
	}
	// One slot is one core.
	want := resource.MustParse(strconv.Itoa(slots))
	if r := tm.Resources.Requests[corev1.ResourceCPU]; r.Cmp(want) != 0 {
		t.Errorf("taskmanager --slots=%d, CPU request %s", slots, r.String())
	}
	if r := tm.Resources.Limits[corev1.ResourceCPU]; r.Cmp(want) != 0 {
		t.Errorf("taskmanager --slots=%d, CPU limit %s", slots, r.String())
	}
	checkMemory(t, tm, tf["memory"])
}

// checkMemory: --memory is the soft limit under the container's hard one,
// with room for what the Go heap does not count (as hummer's own default,
// 90% of the cgroup's limit).
func checkMemory(t *testing.T, c corev1.Container, flagValue string) {
	t.Helper()
	soft, err := session.ParseSize(flagValue, 1)
	if err != nil {
		t.Fatalf("container %s: --memory=%q: %v", c.Name, flagValue, err)
	}
	limit, request := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Requests[corev1.ResourceMemory]
	if limit.IsZero() || limit.Cmp(request) != 0 || soft > limit.Value()*9/10 || soft < limit.Value()*8/10 {
		t.Errorf("container %s: --memory=%s (%d bytes), memory request %s and limit %s; want equal, and --memory 80-90%% of it",
			c.Name, flagValue, soft, request.String(), limit.String())
	}
}

func checkSecret(t *testing.T, name, key string) {
	t.Helper()
	keys, ok := secretKeys[name]
	if !ok {
		t.Errorf("Secret %s: not one the README has the user create", name)
	} else if key != "" && !slices.Contains(keys, key) {
		t.Errorf("Secret %s has no key %s (it has %v)", name, key, keys)
	}
}

func mountedAt(c corev1.Container, volume, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == volume && m.MountPath == path {
			return true
		}
	}
	return false
}

func servicePort(s *corev1.Service, name string) int32 {
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return p.Port
		}
	}
	return -1
}

// TestKubernetesStrictDecoding: the strict decoding above does catch a field
// that is not in the API (a test that could not fail would prove nothing).
func TestKubernetesStrictDecoding(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(manifestDir, "taskmanager-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(string(data), "readinessProbe:", "readinesProbe:", 1)
	if err := yaml.UnmarshalStrict([]byte(typo), &appsv1.Deployment{}); err == nil || !strings.Contains(err.Error(), "readinesProbe") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}

// TestTestOnlyModulesNotInBinary: the Kubernetes API types, the fake S3
// server and the in-process registry are the tests' alone; the binary does
// not link them.
func TestTestOnlyModulesNotInBinary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	pkgs := strings.Fields(string(out))
	if !slices.Contains(pkgs, "gocloud.dev/blob/s3blob") {
		t.Fatalf("go list -deps does not list what the binary links:\n%s", out)
	}
	for _, pkg := range pkgs {
		for _, testOnly := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/johannesboyne/gofakes3", "github.com/google/go-containerregistry/pkg/registry"} {
			if strings.HasPrefix(pkg, testOnly) {
				t.Errorf("cmd/hummer links %s", pkg)
			}
		}
	}
}

// TestReadmeKubernetes: the README's Kubernetes steps create every Secret
// the manifests use, with the keys they read, and apply the manifests'
// directory.
func TestReadmeKubernetes(t *testing.T) {
	block := readmeBlock(t, "kubectl apply -k deploy/kubernetes")
	for name, keys := range secretKeys {
		var line string
		for _, l := range strings.Split(block, "\n") {
			if strings.Contains(l, "kubectl create secret ") && strings.Contains(l, " "+name+" ") {
				line = l
			}
		}
		if line == "" {
			t.Errorf("the README does not create the Secret %s", name)
			continue
		}
		for _, k := range keys {
			// kubectl create secret tls takes --cert and --key into tls.crt and tls.key.
			tlsFlag := map[string]string{corev1.TLSCertKey: "--cert=", corev1.TLSPrivateKeyKey: "--key="}[k]
			if !strings.Contains(line, "--from-literal="+k+"=") && (tlsFlag == "" || !strings.Contains(line, "secret tls ") || !strings.Contains(line, tlsFlag)) {
				t.Errorf("the README's Secret %s has no key %s: %s", name, k, line)
			}
		}
	}
	if _, err := os.Stat(manifestDir); err != nil {
		t.Error(err)
	}
}
