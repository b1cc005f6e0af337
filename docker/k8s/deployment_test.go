package k8s

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// What these manifests promise beyond being valid (the issue that asked
// for them): etcd of three on the etcd server the project is tested
// against, a budget that keeps its quorum, two masters that find etcd by
// its members' names, are ready only while leading and advertise their
// pod's IP, a Service for the status page, and trainers as an Indexed Job
// with the masters' locks. checkIssue is part of check, so that
// TestBrokenCopiesFail breaks these too.

const (
	etcdImage     = "gcr.io/etcd-development/etcd"
	etcdModule    = "go.etcd.io/etcd/server/v3"
	resignBound   = 2 // seconds internal/leader's resign waits for etcd at most
	statusService = "trainmaster-status"
)

// flagValue returns the value of -name=value among a container's args.
func flagValue(ct *corev1.Container, name string) (string, bool) {
	for _, a := range ct.Args {
		if n, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); ok && n == name {
			return v, true
		}
	}
	return "", false
}

func envVar(ct *corev1.Container, name string) *corev1.EnvVar {
	for i := range ct.Env {
		if ct.Env[i].Name == name {
			return &ct.Env[i]
		}
	}
	return nil
}

// port returns the port of a listen address such as ":8080".
func port(addr string) string {
	return addr[strings.LastIndex(addr, ":")+1:]
}

func (c *checker) checkIssue() {
	var etcd *appsv1.StatefulSet
	var master *appsv1.Deployment
	var trainers *batchv1.Job
	var em, mm, tm *manifest
	for _, m := range c.ms {
		switch o := m.obj.(type) {
		case *appsv1.StatefulSet:
			if o.Name == "etcd" {
				etcd, em = o, m
			}
		case *appsv1.Deployment:
			if o.Name == "trainmaster" {
				master, mm = o, m
			}
		case *batchv1.Job:
			trainers, tm = o, m
		}
	}
	if etcd == nil || master == nil || trainers == nil {
		c.errs = append(c.errs, fmt.Errorf("want the StatefulSet etcd, the Deployment trainmaster and a trainer Job; have %v, %v, %v", etcd != nil, master != nil, trainers != nil))
		return
	}
	clientURLs := c.checkEtcd(em, etcd)
	namespace := c.checkMaster(mm, master, clientURLs)
	c.checkTrainers(tm, trainers, clientURLs, namespace)
}

// checkEtcd returns the members' client URLs.
func (c *checker) checkEtcd(m *manifest, s *appsv1.StatefulSet) []string {
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 3 {
		c.errorf(m, "want 3 replicas")
		return nil
	}
	if len(s.Spec.VolumeClaimTemplates) == 0 {
		c.errorf(m, "no volumeClaimTemplates: a member's data must outlive its pod")
	}
	ct := &s.Spec.Template.Spec.Containers[0]
	gomod, err := c.source("go.mod")
	if err != nil {
		c.errorf(m, "%v", err)
	} else if v := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(etcdModule) + `\s+(v\S+)`).FindSubmatch(gomod); v == nil {
		c.errorf(m, "go.mod does not require %s", etcdModule)
	} else if want := etcdImage + ":" + string(v[1]); ct.Image != want {
		c.errorf(m, "image %s: want %s, the etcd server of go.mod (%s %s) that the project is tested and measured against", ct.Image, want, etcdModule, v[1])
	}
	var members, urls []string
	for i := range int(*s.Spec.Replicas) {
		host := fmt.Sprintf("%s-%d.%s", s.Name, i, s.Spec.ServiceName)
		members = append(members, fmt.Sprintf("%s-%d=http://%s:2380", s.Name, i, host))
		urls = append(urls, fmt.Sprintf("http://%s:2379", host))
	}
	args := map[string]string{}
	for _, a := range ct.Args {
		if n, v, ok := strings.Cut(a, "="); ok {
			args[n] = v
		}
	}
	if got, want := args["--initial-cluster"], strings.Join(members, ","); got != want {
		c.errorf(m, "--initial-cluster=%s; want every member by its stable name: %s", got, want)
	}
	for flag, want := range map[string]string{
		"--name":                        "$(POD_NAME)",
		"--initial-advertise-peer-urls": "http://$(POD_NAME)." + s.Spec.ServiceName + ":2380",
		"--advertise-client-urls":       "http://$(POD_NAME)." + s.Spec.ServiceName + ":2379",
	} {
		if args[flag] != want {
			c.errorf(m, "%s=%s; want %s", flag, args[flag], want)
		}
	}
	if e := envVar(ct, "POD_NAME"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		c.errorf(m, "POD_NAME must come from metadata.name")
	}
	// The budget: two of three members stay.
	budget := false
	for _, pm := range c.ms {
		if p, ok := pm.obj.(*policyv1.PodDisruptionBudget); ok && p.Spec.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err == nil && sel.Matches(labels.Set(s.Spec.Template.Labels)) {
				budget = true
				if p.Spec.MinAvailable == nil || *p.Spec.MinAvailable != intstr.FromInt32(2) {
					c.errorf(pm, "etcd's budget: want minAvailable 2")
				}
			}
		}
	}
	if !budget {
		c.errorf(m, "no PodDisruptionBudget selects etcd's pods")
	}
	return urls
}

// checkMaster returns the masters' -namespace.
func (c *checker) checkMaster(m *manifest, d *appsv1.Deployment, etcdURLs []string) string {
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		c.errorf(m, "want 2 replicas: a leader and a standby")
	}
	spec := &d.Spec.Template.Spec
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= resignBound {
		c.errorf(m, "terminationGracePeriodSeconds must be set above the %d s the leader's resign takes at most", resignBound)
	}
	ct := &spec.Containers[0]
	if len(ct.Command) != 0 || imageName(ct.Image) != "trainmaster" {
		c.errorf(m, "the master runs the trainmaster image's entry point, /master")
	}
	if got, want := must(flagValue(ct, "endpoints")), strings.Join(etcdURLs, ","); got != want {
		c.errorf(m, "-endpoints=%s; want every etcd member: %s", got, want)
	}
	namespace, ok := flagValue(ct, "namespace")
	if !ok || namespace == "" {
		c.errorf(m, "no -namespace")
	}
	addr, httpAddr := must(flagValue(ct, "addr")), must(flagValue(ct, "http-addr"))
	var trainerPort, httpPort intstr.IntOrString
	for _, p := range ct.Ports {
		switch fmt.Sprint(p.ContainerPort) {
		case port(addr):
			trainerPort = intstr.FromInt32(p.ContainerPort)
		case port(httpAddr):
			httpPort = intstr.FromInt32(p.ContainerPort)
		}
	}
	if trainerPort.IntVal == 0 || httpPort.IntVal == 0 {
		c.errorf(m, "the container must declare the ports of -addr=%s and -http-addr=%s", addr, httpAddr)
	}
	for what, probe := range map[string]*corev1.Probe{"/readyz": ct.ReadinessProbe, "/healthz": ct.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != what || containerPort(ct, probe.HTTPGet.Port) != httpPort.IntVal {
			c.errorf(m, "want the %s probe on %s of -http-addr's port %d", map[string]string{"/readyz": "readiness", "/healthz": "liveness"}[what], what, httpPort.IntVal)
			continue
		}
		_, tls := flagValue(ct, "tls-cert")
		if tls != (probe.HTTPGet.Scheme == corev1.URISchemeHTTPS) {
			c.errorf(m, "the %s probe: with -tls-cert the side door speaks HTTPS, without it HTTP", what)
		}
	}
	podIP := envVar(ct, "POD_IP")
	if podIP == nil || podIP.ValueFrom == nil || podIP.ValueFrom.FieldRef == nil || podIP.ValueFrom.FieldRef.FieldPath != "status.podIP" {
		c.errorf(m, "POD_IP must come from status.podIP")
	}
	if e := envVar(ct, "MASTER_ADVERTISE"); e == nil || e.Value != "$(POD_IP):"+port(addr) {
		c.errorf(m, "MASTER_ADVERTISE must be $(POD_IP):%s, the pod's IP and -addr's port", port(addr))
	}
	for _, f := range []string{"tls-cert", "tls-key", "tls-client-ca", "token-file"} {
		if _, ok := flagValue(ct, f); !ok {
			c.errorf(m, "no -%s: the trainer port is locked with TLS, client certificates and a token", f)
		}
	}
	// The status Service reaches the side door.
	found := false
	for _, sm := range c.ms {
		if s, ok := sm.obj.(*corev1.Service); ok && s.Name == statusService {
			found = true
			if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) || len(s.Spec.Ports) != 1 ||
				containerPort(ct, s.Spec.Ports[0].TargetPort) != httpPort.IntVal {
				c.errorf(sm, "must select the masters and target -http-addr's port %d", httpPort.IntVal)
			}
		}
	}
	if !found {
		c.errorf(m, "no Service %s for the status page and /metrics", statusService)
	}
	return namespace
}

func (c *checker) checkTrainers(m *manifest, j *batchv1.Job, etcdURLs []string, namespace string) {
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		c.errorf(m, "want completionMode Indexed")
	}
	if j.Spec.Parallelism == nil || *j.Spec.Parallelism != 4 {
		c.errorf(m, "want parallelism 4")
	}
	ct := &j.Spec.Template.Spec.Containers[0]
	if len(ct.Command) != 1 || ct.Command[0] != "/trainer" || imageName(ct.Image) != "trainmaster" {
		c.errorf(m, "the trainer runs /trainer of the trainmaster image")
	}
	if got, want := must(flagValue(ct, "endpoints")), strings.Join(etcdURLs, ","); got != want {
		c.errorf(m, "-endpoints=%s; want every etcd member: %s", got, want)
	}
	if got := must(flagValue(ct, "namespace")); got != namespace {
		c.errorf(m, "-namespace=%s; the masters' is %s", got, namespace)
	}
	if must(flagValue(ct, "name")) != "$(POD_NAME)" {
		c.errorf(m, "want -name=$(POD_NAME)")
	}
	if e := envVar(ct, "POD_NAME"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		c.errorf(m, "POD_NAME must come from metadata.name")
	}
	if e := envVar(ct, "TRAINER_TOKEN_FILE"); e == nil || e.Value == "" {
		c.errorf(m, "no TRAINER_TOKEN_FILE: the masters want a token")
	}
	if _, ok := flagValue(ct, "tls-ca"); !ok {
		c.errorf(m, "no -tls-ca: the masters speak TLS")
	}
}

func must(v string, _ bool) string { return v }
