package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
)

// pods maps what a cluster gives the manifests' pods onto this machine:
// each volume mount a directory, each container port a free loopback port,
// the JobManager's Service name loopback, Secrets and the downward API values.
type pods struct {
	t       *testing.T
	dirs    map[string]string // mount path -> directory
	ports   map[string]string // "container/port" -> free port
	secrets map[string]map[string]string
	config  map[string]map[string]string
}

// env is a container's environment as the kubelet would set it.
func (p *pods) env(c corev1.Container) []string {
	var env []string
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.SecretKeyRef != nil:
			v = p.secrets[e.ValueFrom.SecretKeyRef.Name][e.ValueFrom.SecretKeyRef.Key]
		case e.ValueFrom.ConfigMapKeyRef != nil:
			v = p.config[e.ValueFrom.ConfigMapKeyRef.Name][e.ValueFrom.ConfigMapKeyRef.Key]
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			v = "127.0.0.1"
		default:
			p.t.Fatalf("env %s: no value for %+v", e.Name, e.ValueFrom)
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// args are a container's args with $(VAR) expanded, mount paths moved to
// their directories, its ports to free ones (an address on every interface
// stays so) and the Service's name to the JobManager's rpc port here.
func (p *pods) args(c corev1.Container, env []string, service string) []string {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	var out []string
	for _, a := range c.Args {
		a = ref.ReplaceAllStringFunc(a, func(s string) string { return vars[s[2:len(s)-1]] })
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			out = append(out, a)
			continue
		}
		for _, m := range c.VolumeMounts {
			if dir, ok := p.dirs[m.MountPath]; ok && (value == m.MountPath || strings.HasPrefix(value, m.MountPath+"/")) {
				value = dir + strings.TrimPrefix(value, m.MountPath)
			}
		}
		if host, port, err := net.SplitHostPort(value); err == nil {
			if host == service {
				value = p.ports["jobmanager/rpc"]
			}
			for _, cp := range c.Ports {
				if strconv.Itoa(int(cp.ContainerPort)) == port && host != service {
					_, free, _ := net.SplitHostPort(p.ports[c.Name+"/"+cp.Name])
					if host != "0.0.0.0" {
						host = "127.0.0.1"
					}
					value = net.JoinHostPort(host, free)
				}
			}
		}
		out = append(out, name+"="+value)
	}
	return out
}

// TestKubernetesPodsAsProcesses runs the manifests' containers as processes:
// their args and env as written (volumes, ports, the Service's name and the
// pod IP mapped onto this machine), the Secrets' and ConfigMap's values, the
// checkpoint store on an in-process S3 server. The JobManager and its
// TaskManagers turn ready on the probes' paths, psql gets in over TLS with
// the Secret's password, a query runs across the TaskManagers, and a view's
// continuous job checkpoints into the ConfigMap's bucket. The JobManager's
// pod then comes back without its volume, on an empty data directory: the
// catalog in the ConfigMap's catalog-store still has the tables and the
// view, whose job resumes from its checkpoint.
func TestKubernetesPodsAsProcesses(t *testing.T) {
	m := loadManifests(t)
	jmDep, jm := container(t, m, "hummer-jobmanager")
	tmDep, tm := container(t, m, "hummer-taskmanager")
	service := m.services["hummer-jobmanager"].Name
	endpoint, backend := fakeS3(t, "hummer-checkpoints")
	store := m.configMaps["hummer"].Data["checkpoint-store"]
	if !strings.HasPrefix(store, "s3://hummer-checkpoints/") {
		t.Fatalf("the ConfigMap's checkpoint-store %q: want a bucket this test serves", store)
	}
	catalogStore := m.configMaps["hummer"].Data["catalog-store"]
	if !strings.HasPrefix(catalogStore, "s3://hummer-checkpoints/") {
		t.Fatalf("the ConfigMap's catalog-store %q: want a bucket this test serves", catalogStore)
	}
	_, certFile, keyFile := writeTestCerts(t)
	p := &pods{t: t, dirs: map[string]string{}, ports: map[string]string{},
		secrets: map[string]map[string]string{
			"hummer-superuser": {"password": "k8s secret"},
			"hummer-s3":        {"AWS_ACCESS_KEY_ID": "hummer", "AWS_SECRET_ACCESS_KEY": "hummer-secret"},
		},
		config: map[string]map[string]string{"hummer": {"checkpoint-store": store + "&endpoint=" + endpoint,
			"catalog-store": catalogStore + "&endpoint=" + endpoint}}}
	tlsDir := t.TempDir()
	for name, src := range map[string]string{corev1.TLSCertKey: certFile, corev1.TLSPrivateKeyKey: keyFile} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tlsDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range jmDep.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "hummer-tls" {
			for _, mnt := range jm.VolumeMounts {
				if mnt.Name == v.Name {
					p.dirs[mnt.MountPath] = tlsDir
				}
			}
		}
	}
	for _, c := range []corev1.Container{jm, tm} {
		for _, cp := range c.Ports {
			p.ports[c.Name+"/"+cp.Name] = freeAddr(t)
		}
	}
	bin := buildHummer(t)
	jmEnv := p.env(jm)
	p.dirs["/var/lib/hummer"] = t.TempDir()
	jmArgs := p.args(jm, jmEnv, service)
	t.Logf("jobmanager %s", strings.Join(jmArgs, " "))
	jmProc := startKillableEnv(t, bin, jmEnv, jmArgs...)
	jmHTTP := p.ports["jobmanager/http"]
	waitUntil(t, "the JobManager's "+jm.ReadinessProbe.HTTPGet.Path, jmProc.exited, func() bool {
		return probe("http://"+jmHTTP+jm.ReadinessProbe.HTTPGet.Path) == 200
	})

	// The replicas share the ports the manifest gives: here each its own.
	replicas := int(*tmDep.Spec.Replicas)
	for i := range replicas {
		for _, cp := range tm.Ports {
			p.ports[tm.Name+"/"+cp.Name] = freeAddr(t)
		}
		p.dirs["/var/lib/hummer"] = t.TempDir()
		env := p.env(tm)
		args := p.args(tm, env, service)
		if i == 0 {
			t.Logf("taskmanager %s", strings.Join(args, " "))
		}
		k := startKillableEnv(t, bin, env, args...)
		http := p.ports["taskmanager/http"]
		waitUntil(t, fmt.Sprintf("TaskManager %d's %s", i, tm.ReadinessProbe.HTTPGet.Path), k.exited, func() bool {
			return probe("http://"+http+tm.ReadinessProbe.HTTPGet.Path) == 200 && probe("http://"+http+tm.LivenessProbe.HTTPGet.Path) == 200
		})
	}

	pg := p.ports["jobmanager/postgresql"]
	login := []string{"PGPASSWORD=k8s secret", "PGSSLMODE=require"}
	if out, err := psqlAs(pg, "hummer", []string{"PGPASSWORD=wrong", "PGSSLMODE=require"}, "SELECT 1;"); err == nil {
		t.Errorf("a wrong password got in:\n%s", out)
	}
	out, err := psqlAs(pg, "hummer", login, "\\conninfo\n")
	if err != nil || !strings.Contains(out, "SSL connection") {
		t.Fatalf("psql over TLS with the Secret's password: %v\n%s", err, out)
	}

	words := filepath.Join(t.TempDir(), "words.txt")
	var text strings.Builder
	want := map[string]int{}
	for i := range 2000 {
		w := fmt.Sprintf("w%d", i%29)
		want[w]++
		fmt.Fprintln(&text, w)
	}
	if err := os.WriteFile(words, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	slots, _ := strconv.Atoi(strings.TrimPrefix(argOf(tm.Args, "--slots"), "--slots="))
	out, err = psqlAs(pg, "hummer", login, fmt.Sprintf(`CREATE TABLE words (w TEXT) ENGINE=file CONNECTION='file://%s';
SET parallelism = %d;
SELECT w, COUNT(*) FROM words GROUP BY w;`, words, slots*replicas))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		w, n, _ := strings.Cut(line, "|")
		got[w], _ = strconv.Atoi(n)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a query over all %d slots:\n%s\nwant %v", slots*replicas, out, want)
	}

	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "lines"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kafkaAddr := broker.ListenAddrs()[0]
	if out, err := psqlAs(pg, "hummer", login, fmt.Sprintf(`CREATE TABLE feed (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/lines';
CREATE VIEW n AS SELECT COUNT(*) AS n FROM feed;`, kafkaAddr)); err != nil || strings.Contains(out, "ERROR") {
		t.Fatalf("%v\n%s", err, out)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "lines", Value: []byte(fmt.Sprint("line ", i))})
	}
	if err := producer.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimPrefix(store, "s3://hummer-checkpoints/")
	prefix, _, _ = strings.Cut(prefix, "?")
	waitUntil(t, "the view's count and a complete checkpoint in the bucket", jmProc.exited, func() bool {
		out, err := psqlAs(pg, "hummer", login, "SELECT n FROM n;")
		if err != nil || strings.TrimSpace(out) != "10" {
			return false
		}
		for _, k := range s3Keys(t, backend, "hummer-checkpoints", prefix+"/") {
			if strings.Contains(k, "/complete/") {
				return true
			}
		}
		return false
	})

	jmProc.kill(t)
	p.dirs["/var/lib/hummer"] = t.TempDir()
	jmProc = startKillableEnv(t, bin, jmEnv, p.args(jm, jmEnv, service)...)
	waitUntil(t, "the JobManager's "+jm.ReadinessProbe.HTTPGet.Path+" on an empty data directory", jmProc.exited, func() bool {
		return probe("http://"+jmHTTP+jm.ReadinessProbe.HTTPGet.Path) == 200
	})
	waitUntil(t, "the tables and the view's count after the JobManager lost its volume", jmProc.exited, func() bool {
		out, err := psqlAs(pg, "hummer", login, "SELECT count(*) FROM words;\nSELECT n FROM n;")
		return err == nil && strings.Join(strings.Fields(out), " ") == "2000 10"
	})
}

// argOf returns the arg that sets flag name (--name=value), or "".
func argOf(args []string, name string) string {
	for _, a := range args {
		if strings.HasPrefix(a, name+"=") {
			return a
		}
	}
	return ""
}
