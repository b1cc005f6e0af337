package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The test reads every *.yaml file of this directory, splits it into
// documents on "---" lines, and decodes each into the upstream type of its
// apiVersion and kind: YAML to JSON with sigs.k8s.io/yaml's strict
// conversion (duplicate keys fail), then encoding/json with
// DisallowUnknownFields (unknown fields and wrong types fail), then
// sigs.k8s.io/json's strict decoding, the API server's own, which also
// refuses fields written in the wrong case ("Replicas"). What the types
// cannot say (required fields, references between objects, the flags of
// the project's binaries) is checked in code below, and
// TestBrokenCopiesFail shows each check failing on a broken copy.

// root is the repository's root, for the flag sources and go.mod.
const root = "../.."

// kinds maps "apiVersion kind" to a new object of the upstream type. A kind
// missing here fails: add it together with the checks it needs.
var kinds = map[string]func() any{
	"apps/v1 Deployment":                            func() any { return new(appsv1.Deployment) },
	"apps/v1 StatefulSet":                           func() any { return new(appsv1.StatefulSet) },
	"batch/v1 Job":                                  func() any { return new(batchv1.Job) },
	"v1 Service":                                    func() any { return new(corev1.Service) },
	"v1 Secret":                                     func() any { return new(corev1.Secret) },
	"v1 ConfigMap":                                  func() any { return new(corev1.ConfigMap) },
	"v1 PersistentVolumeClaim":                      func() any { return new(corev1.PersistentVolumeClaim) },
	"policy/v1 PodDisruptionBudget":                 func() any { return new(policyv1.PodDisruptionBudget) },
	"networking.k8s.io/v1 NetworkPolicy":            func() any { return new(networkingv1.NetworkPolicy) },
	"kustomize.config.k8s.io/v1beta1 Kustomization": func() any { return new(kustomization) },
}

// kustomization is the part of kustomize's Kustomization these manifests
// use (its type lives in sigs.k8s.io/kustomize/api, too large a module for
// this): a field not listed here fails as unknown.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string   `json:"namespace,omitempty"`
	Resources       []string `json:"resources"`
	Images          []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

// manifest is one document of one file, decoded.
type manifest struct {
	file string // base name
	doc  int    // its place among the file's documents, from 1
	key  string // "apiVersion kind"
	obj  any    // a pointer to the typed object
}

func (m *manifest) name() string {
	if o, ok := m.obj.(metav1.Object); ok {
		return o.GetName()
	}
	return ""
}

func (m *manifest) String() string {
	kind := m.key[strings.LastIndex(m.key, " ")+1:]
	if n := m.name(); n != "" {
		kind += " " + n
	}
	return fmt.Sprintf("%s#%d (%s)", m.file, m.doc, kind)
}

// docSeparator is a line "---", which starts a new YAML document.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// decode decodes every document of every file; it returns the manifests
// that decoded and an error for each that did not.
func decode(files map[string][]byte) ([]*manifest, []error) {
	var ms []*manifest
	var errs []error
	for _, file := range sortedKeys(files) {
		for i, doc := range docSeparator.Split(string(files[file]), -1) {
			m, err := decodeDoc(file, i+1, []byte(doc))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s#%d: %w", file, i+1, err))
			} else if m != nil {
				ms = append(ms, m)
			}
		}
	}
	return ms, errs
}

// decodeDoc decodes one document; nil, nil for one of comments alone.
func decodeDoc(file string, n int, doc []byte) (*manifest, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	if s := string(bytes.TrimSpace(js)); s == "null" || s == "" {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("not an object with apiVersion and kind: %w", err)
	}
	key := tm.APIVersion + " " + tm.Kind
	newObj, ok := kinds[key]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q of apiVersion %q (the test knows %s)", tm.Kind, tm.APIVersion, strings.Join(sortedKeys(kinds), ", "))
	}
	obj := newObj()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the object", key)
	}
	// The API server's decoder: case-sensitive field names, no duplicates.
	strict, err := sigsjson.UnmarshalStrict(js, newObj(), sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %v", key, strict)
	}
	return &manifest{file: file, doc: n, key: key, obj: obj}, nil
}

// checker holds the manifests and what the checks look up across them.
type checker struct {
	files     map[string][]byte
	ms        []*manifest
	errs      []error
	source    func(rel string) ([]byte, error) // a file of the repository
	secrets   map[string]*corev1.Secret
	configs   map[string]*corev1.ConfigMap
	claims    map[string]*corev1.PersistentVolumeClaim
	workloads []*workload
}

// workload is a Deployment, StatefulSet or Job: a pod template and what
// selects it.
type workload struct {
	m         *manifest
	selector  *metav1.LabelSelector // nil for a Job
	template  *corev1.PodTemplateSpec
	replicas  *int32
	templates []corev1.PersistentVolumeClaim // a StatefulSet's volumeClaimTemplates
	job       bool
}

func (c *checker) errorf(m *manifest, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s", m, fmt.Sprintf(format, args...)))
}

// check decodes and checks files, reading the repository's files through
// source; it returns every problem found.
func check(files map[string][]byte, source func(rel string) ([]byte, error)) []error {
	c := &checker{files: files, source: source, secrets: map[string]*corev1.Secret{},
		configs: map[string]*corev1.ConfigMap{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	c.ms, c.errs = decode(files)
	if len(files) == 0 {
		c.errs = append(c.errs, fmt.Errorf("no manifests"))
	}
	seen := map[string]*manifest{}
	for _, m := range c.ms {
		if o, ok := m.obj.(metav1.Object); ok {
			id := m.key + " " + o.GetName()
			if first, dup := seen[id]; dup {
				c.errorf(m, "a second object of this kind and name (the first: %s)", first)
			}
			seen[id] = m
			c.checkMeta(m, o)
		}
		switch o := m.obj.(type) {
		case *corev1.Secret:
			c.secrets[o.Name] = o
		case *corev1.ConfigMap:
			c.configs[o.Name] = o
		case *corev1.PersistentVolumeClaim:
			c.claims[o.Name] = o
		case *appsv1.Deployment:
			c.workloads = append(c.workloads, &workload{m: m, selector: o.Spec.Selector, template: &o.Spec.Template, replicas: o.Spec.Replicas})
		case *appsv1.StatefulSet:
			c.workloads = append(c.workloads, &workload{m: m, selector: o.Spec.Selector, template: &o.Spec.Template, replicas: o.Spec.Replicas, templates: o.Spec.VolumeClaimTemplates})
		case *batchv1.Job:
			c.workloads = append(c.workloads, &workload{m: m, selector: o.Spec.Selector, template: &o.Spec.Template, job: true})
		}
	}
	for _, m := range c.ms {
		switch o := m.obj.(type) {
		case *corev1.Secret:
			c.checkSecret(m, o)
		case *corev1.ConfigMap:
			for k := range o.Data {
				c.checkKey(m, k)
			}
		case *corev1.PersistentVolumeClaim:
			c.checkClaimSpec(m, o.Name, &o.Spec)
		case *corev1.Service:
			c.checkService(m, o)
		case *appsv1.Deployment, *appsv1.StatefulSet, *batchv1.Job:
			c.checkWorkload(c.workloadOf(m))
		case *policyv1.PodDisruptionBudget:
			c.checkPDB(m, o)
		case *networkingv1.NetworkPolicy:
			c.checkNetworkPolicy(m, o)
		case *kustomization:
			c.checkKustomization(m, o)
		}
	}
	c.checkIssue()
	return c.errs
}

func (c *checker) workloadOf(m *manifest) *workload {
	for _, w := range c.workloads {
		if w.m == m {
			return w
		}
	}
	panic("no workload for " + m.String())
}

func (c *checker) checkMeta(m *manifest, o metav1.Object) {
	name := o.GetName()
	switch {
	case name == "":
		c.errorf(m, "metadata.name is missing")
	case m.key == "v1 Service":
		for _, e := range validation.IsDNS1035Label(name) {
			c.errorf(m, "metadata.name %q: %s", name, e)
		}
	default:
		for _, e := range validation.IsDNS1123Subdomain(name) {
			c.errorf(m, "metadata.name %q: %s", name, e)
		}
	}
	c.checkLabels(m, "metadata.labels", o.GetLabels())
}

func (c *checker) checkLabels(m *manifest, where string, ls map[string]string) {
	for _, k := range sortedKeys(ls) {
		for _, e := range validation.IsQualifiedName(k) {
			c.errorf(m, "%s: key %q: %s", where, k, e)
		}
		for _, e := range validation.IsValidLabelValue(ls[k]) {
			c.errorf(m, "%s: value %q of %s: %s", where, ls[k], k, e)
		}
	}
}

func (c *checker) checkKey(m *manifest, k string) {
	for _, e := range validation.IsConfigMapKey(k) {
		c.errorf(m, "key %q: %s", k, e)
	}
}

func (c *checker) checkSecret(m *manifest, s *corev1.Secret) {
	for k := range s.Data {
		c.checkKey(m, k)
	}
	for k := range s.StringData {
		c.checkKey(m, k)
	}
	if s.Type == corev1.SecretTypeTLS {
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if !secretHas(s, k) {
				c.errorf(m, "a Secret of type %s needs the key %s", s.Type, k)
			}
		}
	}
}

func secretHas(s *corev1.Secret, key string) bool {
	_, inData := s.Data[key]
	_, inString := s.StringData[key]
	return inData || inString
}

func (c *checker) checkClaimSpec(m *manifest, name string, spec *corev1.PersistentVolumeClaimSpec) {
	if len(spec.AccessModes) == 0 {
		c.errorf(m, "claim %s: no accessModes", name)
	}
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.Sign() <= 0 {
		c.errorf(m, "claim %s: no resources.requests.storage", name)
	}
}

// matching returns the workloads whose pod labels sel selects.
func (c *checker) matching(sel labels.Selector) []*workload {
	var ws []*workload
	for _, w := range c.workloads {
		if sel.Matches(labels.Set(w.template.Labels)) {
			ws = append(ws, w)
		}
	}
	return ws
}

// selectorOf converts a LabelSelector; an empty one (which selects every
// pod) is an error here.
func (c *checker) selectorOf(m *manifest, where string, ls *metav1.LabelSelector) labels.Selector {
	if ls == nil || len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
		c.errorf(m, "%s is missing or empty", where)
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		c.errorf(m, "%s: %v", where, err)
		return nil
	}
	return sel
}

func (c *checker) checkWorkload(w *workload) {
	m, t := w.m, w.template
	c.checkLabels(m, "the template's labels", t.Labels)
	if len(t.Labels) == 0 {
		c.errorf(m, "the pod template has no labels")
	}
	if w.job {
		if w.selector != nil {
			c.errorf(m, "a Job's selector is generated: leave it out")
		}
	} else {
		if w.replicas == nil {
			c.errorf(m, "spec.replicas is not set")
		}
		if sel := c.selectorOf(m, "spec.selector", w.selector); sel != nil && !sel.Matches(labels.Set(t.Labels)) {
			c.errorf(m, "spec.selector %s does not match the template's labels %v", sel, t.Labels)
		}
	}
	switch o := m.obj.(type) {
	case *appsv1.StatefulSet:
		c.checkStatefulSet(w, o)
	case *batchv1.Job:
		c.checkJob(w, o)
	}
	c.checkPod(w)
}

func (c *checker) checkStatefulSet(w *workload, s *appsv1.StatefulSet) {
	var svc *corev1.Service
	for _, m := range c.ms {
		if o, ok := m.obj.(*corev1.Service); ok && o.Name == s.Spec.ServiceName {
			svc = o
		}
	}
	switch {
	case s.Spec.ServiceName == "":
		c.errorf(w.m, "spec.serviceName is missing (the headless Service that names the pods)")
	case svc == nil:
		c.errorf(w.m, "spec.serviceName %q: no such Service among the manifests", s.Spec.ServiceName)
	case svc.Spec.ClusterIP != corev1.ClusterIPNone:
		c.errorf(w.m, "spec.serviceName %q: the Service is not headless (clusterIP: None)", s.Spec.ServiceName)
	case !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.template.Labels)):
		c.errorf(w.m, "spec.serviceName %q: the Service does not select these pods", s.Spec.ServiceName)
	}
	for i := range w.templates {
		pvc := &w.templates[i]
		if pvc.Name == "" {
			c.errorf(w.m, "volumeClaimTemplates[%d] has no name", i)
		}
		c.checkClaimSpec(w.m, pvc.Name, &pvc.Spec)
	}
}

func (c *checker) checkJob(w *workload, j *batchv1.Job) {
	rp := w.template.Spec.RestartPolicy
	if rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
		c.errorf(w.m, "a Job's pods need restartPolicy Never or OnFailure, not %q", rp)
	}
	if j.Spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever {
		c.errorf(w.m, "podFailurePolicy needs restartPolicy Never")
	}
	indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	if indexed && j.Spec.Completions == nil {
		c.errorf(w.m, "an Indexed Job needs spec.completions")
	}
	if j.Spec.BackoffLimitPerIndex != nil && !indexed {
		c.errorf(w.m, "backoffLimitPerIndex needs completionMode Indexed")
	}
	if j.Spec.PodFailurePolicy != nil {
		for i, r := range j.Spec.PodFailurePolicy.Rules {
			if r.OnExitCodes != nil && r.OnExitCodes.ContainerName != nil && container(w.template, *r.OnExitCodes.ContainerName) == nil {
				c.errorf(w.m, "podFailurePolicy rule %d names container %q, which the pod does not have", i, *r.OnExitCodes.ContainerName)
			}
		}
	}
}

func container(t *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == name {
			return &t.Spec.Containers[i]
		}
	}
	return nil
}

// envRef is a reference $(NAME) to an environment variable in a value,
// unless escaped as $$(NAME).
var envRef = regexp.MustCompile(`(^|[^$])\$\(([^)]*)\)`)

func (c *checker) checkPod(w *workload) {
	m, spec := w.m, &w.template.Spec
	if !w.job && spec.RestartPolicy != "" && spec.RestartPolicy != corev1.RestartPolicyAlways {
		c.errorf(m, "restartPolicy %q: a %s restarts its pods", spec.RestartPolicy, m.key)
	}
	// Volumes: declared once, each from something that exists, each used.
	volumes := map[string]*corev1.Volume{}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if volumes[v.Name] != nil {
			c.errorf(m, "volume %q declared twice", v.Name)
		}
		for _, e := range validation.IsDNS1123Label(v.Name) {
			c.errorf(m, "volume %q: %s", v.Name, e)
		}
		volumes[v.Name] = v
		c.checkVolumeSource(m, v)
	}
	for _, pvc := range w.templates {
		if volumes[pvc.Name] != nil {
			c.errorf(m, "volume %q is both a volume and a volumeClaimTemplate", pvc.Name)
		}
		volumes[pvc.Name] = &corev1.Volume{Name: pvc.Name}
	}
	used := map[string]bool{}
	if len(spec.Containers) == 0 {
		c.errorf(m, "the pod has no containers")
	}
	names := map[string]bool{}
	all := append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...)
	for i := range all {
		ct := &all[i]
		if ct.Name == "" {
			c.errorf(m, "a container has no name")
		}
		if names[ct.Name] {
			c.errorf(m, "two containers named %q", ct.Name)
		}
		names[ct.Name] = true
		for _, vm := range ct.VolumeMounts {
			used[vm.Name] = true
		}
		c.checkContainer(m, w, ct, volumes)
	}
	for _, name := range sortedKeys(volumes) {
		if !used[name] {
			c.errorf(m, "volume %q is mounted by no container", name)
		}
	}
}

func (c *checker) checkVolumeSource(m *manifest, v *corev1.Volume) {
	switch {
	case v.Secret != nil:
		s := c.secrets[v.Secret.SecretName]
		switch {
		case v.Secret.SecretName == "":
			c.errorf(m, "volume %q: secret.secretName is missing", v.Name)
		case s == nil && (v.Secret.Optional == nil || !*v.Secret.Optional):
			c.errorf(m, "volume %q: Secret %q is not among the manifests", v.Name, v.Secret.SecretName)
		case s != nil:
			for _, it := range v.Secret.Items {
				if !secretHas(s, it.Key) {
					c.errorf(m, "volume %q: Secret %q has no key %q", v.Name, s.Name, it.Key)
				}
			}
		}
		// Keys are for the pod's user and group alone, read-only. (YAML
		// reads 0440 as octal; 440 would be 0670.)
		if mode := v.Secret.DefaultMode; mode == nil || *mode&0o227 != 0 {
			c.errorf(m, "volume %q: set defaultMode to 0400 or 0440: a Secret's files are read-only and not for others (%s)", v.Name, modeString(v.Secret.DefaultMode))
		}
	case v.ConfigMap != nil:
		cm := c.configs[v.ConfigMap.Name]
		if cm == nil && (v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional) {
			c.errorf(m, "volume %q: ConfigMap %q is not among the manifests", v.Name, v.ConfigMap.Name)
		}
		for _, it := range v.ConfigMap.Items {
			if cm != nil {
				if _, ok := cm.Data[it.Key]; !ok {
					c.errorf(m, "volume %q: ConfigMap %q has no key %q", v.Name, cm.Name, it.Key)
				}
			}
		}
	case v.PersistentVolumeClaim != nil:
		if c.claims[v.PersistentVolumeClaim.ClaimName] == nil {
			c.errorf(m, "volume %q: PersistentVolumeClaim %q is not among the manifests", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	case v.EmptyDir != nil, v.Projected != nil, v.DownwardAPI != nil:
	default:
		c.errorf(m, "volume %q: no source, or one this test does not know", v.Name)
	}
}

func (c *checker) checkContainer(m *manifest, w *workload, ct *corev1.Container, volumes map[string]*corev1.Volume) {
	where := fmt.Sprintf("container %q", ct.Name)
	for _, e := range validation.IsDNS1123Label(ct.Name) {
		c.errorf(m, "%s: %s", where, e)
	}
	switch {
	case ct.Image == "":
		c.errorf(m, "%s has no image", where)
	case imageTag(ct.Image) == "" && !strings.Contains(ct.Image, "@sha256:"):
		c.errorf(m, "%s: image %q has no tag: pin one", where, ct.Image)
	}
	// Ports.
	ports := map[string]bool{}
	for _, p := range ct.Ports {
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			c.errorf(m, "%s: containerPort %d", where, p.ContainerPort)
		}
		if p.Name != "" {
			for _, e := range validation.IsValidPortName(p.Name) {
				c.errorf(m, "%s: port name %q: %s", where, p.Name, e)
			}
			if ports[p.Name] {
				c.errorf(m, "%s: two ports named %q", where, p.Name)
			}
			ports[p.Name] = true
		}
	}
	for kind, p := range map[string]*corev1.Probe{"readinessProbe": ct.ReadinessProbe, "livenessProbe": ct.LivenessProbe, "startupProbe": ct.StartupProbe} {
		if p != nil {
			c.checkProbe(m, where+" "+kind, ct, p)
		}
	}
	// Mounts: of declared volumes, at distinct absolute paths.
	paths := map[string]bool{}
	for _, vm := range ct.VolumeMounts {
		if volumes[vm.Name] == nil {
			c.errorf(m, "%s mounts volume %q, which the pod does not declare", where, vm.Name)
		}
		if !path.IsAbs(vm.MountPath) {
			c.errorf(m, "%s: mountPath %q is not absolute", where, vm.MountPath)
		}
		if paths[vm.MountPath] {
			c.errorf(m, "%s: two mounts at %s", where, vm.MountPath)
		}
		paths[vm.MountPath] = true
	}
	// Environment: names once; $(REF) only to variables defined before.
	defined := map[string]bool{}
	for _, e := range ct.Env {
		if e.Name == "" {
			c.errorf(m, "%s: an env entry has no name", where)
		}
		if defined[e.Name] {
			c.errorf(m, "%s: env %s set twice", where, e.Name)
		}
		for _, ref := range envRefs(e.Value) {
			if !defined[ref] {
				c.errorf(m, "%s: env %s refers to $(%s), which is not defined before it", where, e.Name, ref)
			}
		}
		defined[e.Name] = true
		if e.ValueFrom != nil {
			c.checkEnvSource(m, where, e)
		}
	}
	for _, arg := range append(append([]string(nil), ct.Command...), ct.Args...) {
		for _, ref := range envRefs(arg) {
			if !defined[ref] {
				c.errorf(m, "%s: %q refers to $(%s), which the container's env does not define", where, arg, ref)
			}
		}
	}
	c.checkFilesInSecrets(m, where, ct, volumes)
	c.checkResources(m, where, ct)
	c.checkSecurity(m, where, w.template.Spec.SecurityContext, ct.SecurityContext)
	if imageName(ct.Image) == "trainmaster" {
		c.checkFlags(m, where, ct)
	}
}

func modeString(mode *int32) string {
	if mode == nil {
		return "unset: 0644"
	}
	return fmt.Sprintf("%#o", *mode)
}

func envRefs(s string) []string {
	var refs []string
	for _, sub := range envRef.FindAllStringSubmatch(s, -1) {
		refs = append(refs, sub[2])
	}
	return refs
}

// imageName is the image's repository without registry host, tag or digest
// ("trainmaster" for registry.example.com/trainmaster:v1); imageTag its tag.
func imageName(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image[strings.LastIndex(image, "/")+1:]
}

func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}

func (c *checker) checkProbe(m *manifest, where string, ct *corev1.Container, p *corev1.Probe) {
	handlers := 0
	var port *intstr.IntOrString
	if p.HTTPGet != nil {
		handlers++
		port = &p.HTTPGet.Port
		if !strings.HasPrefix(p.HTTPGet.Path, "/") {
			c.errorf(m, "%s: path %q does not start with /", where, p.HTTPGet.Path)
		}
	}
	if p.TCPSocket != nil {
		handlers++
		port = &p.TCPSocket.Port
	}
	if p.GRPC != nil {
		handlers++
		port = &intstr.IntOrString{IntVal: p.GRPC.Port}
	}
	if p.Exec != nil {
		handlers++
		if len(p.Exec.Command) == 0 {
			c.errorf(m, "%s: exec without a command", where)
		}
	}
	if handlers != 1 {
		c.errorf(m, "%s: %d handlers (httpGet, tcpSocket, grpc, exec); want exactly one", where, handlers)
	}
	if port != nil && containerPort(ct, *port) == 0 {
		c.errorf(m, "%s: port %s is not a port the container declares", where, port.String())
	}
}

// containerPort is the number of the port p names (by name or number) among
// the container's declared ports; 0 if none.
func containerPort(ct *corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range ct.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

func (c *checker) checkEnvSource(m *manifest, where string, e corev1.EnvVar) {
	vf := e.ValueFrom
	n := 0
	for _, set := range []bool{vf.FieldRef != nil, vf.ResourceFieldRef != nil, vf.SecretKeyRef != nil, vf.ConfigMapKeyRef != nil, vf.FileKeyRef != nil} {
		if set {
			n++
		}
	}
	if n != 1 || e.Value != "" {
		c.errorf(m, "%s: env %s: want exactly one of value and the sources of valueFrom", where, e.Name)
	}
	switch {
	case vf.FieldRef != nil && vf.FieldRef.FieldPath == "":
		c.errorf(m, "%s: env %s: fieldRef without fieldPath", where, e.Name)
	case vf.SecretKeyRef != nil:
		s := c.secrets[vf.SecretKeyRef.Name]
		if s == nil {
			c.errorf(m, "%s: env %s: Secret %q is not among the manifests", where, e.Name, vf.SecretKeyRef.Name)
		} else if !secretHas(s, vf.SecretKeyRef.Key) {
			c.errorf(m, "%s: env %s: Secret %q has no key %q", where, e.Name, s.Name, vf.SecretKeyRef.Key)
		}
	case vf.ConfigMapKeyRef != nil:
		cm := c.configs[vf.ConfigMapKeyRef.Name]
		if cm == nil {
			c.errorf(m, "%s: env %s: ConfigMap %q is not among the manifests", where, e.Name, vf.ConfigMapKeyRef.Name)
		} else if _, ok := cm.Data[vf.ConfigMapKeyRef.Key]; !ok {
			c.errorf(m, "%s: env %s: ConfigMap %q has no key %q", where, e.Name, cm.Name, vf.ConfigMapKeyRef.Key)
		}
	}
}

// checkFilesInSecrets checks that every file a flag or an env value names
// inside a Secret's mount is a key of that Secret: -token-file=/etc/x/token
// with a Secret mounted at /etc/x needs the key "token".
func (c *checker) checkFilesInSecrets(m *manifest, where string, ct *corev1.Container, volumes map[string]*corev1.Volume) {
	var values []string
	for _, a := range ct.Args {
		if _, v, ok := strings.Cut(a, "="); ok {
			values = append(values, v)
		} else {
			values = append(values, a)
		}
	}
	for _, e := range ct.Env {
		values = append(values, e.Value)
	}
	for _, v := range values {
		if !path.IsAbs(v) {
			continue
		}
		var mount *corev1.VolumeMount
		for i, vm := range ct.VolumeMounts {
			if strings.HasPrefix(v, strings.TrimSuffix(vm.MountPath, "/")+"/") && (mount == nil || len(vm.MountPath) > len(mount.MountPath)) {
				mount = &ct.VolumeMounts[i]
			}
		}
		if mount == nil || mount.SubPath != "" {
			continue
		}
		vol := volumes[mount.Name]
		if vol == nil || vol.Secret == nil || c.secrets[vol.Secret.SecretName] == nil {
			continue
		}
		s := c.secrets[vol.Secret.SecretName]
		rel := strings.TrimPrefix(v, strings.TrimSuffix(mount.MountPath, "/")+"/")
		found := false
		if len(vol.Secret.Items) == 0 {
			found = secretHas(s, rel)
		}
		for _, it := range vol.Secret.Items {
			found = found || it.Path == rel
		}
		if !found {
			c.errorf(m, "%s names %s, but Secret %q mounted at %s has no key %q", where, v, s.Name, mount.MountPath, rel)
		}
	}
}

func (c *checker) checkResources(m *manifest, where string, ct *corev1.Container) {
	r := ct.Resources
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := r.Requests[res]
		lim, hasLim := r.Limits[res]
		switch {
		case !hasReq:
			c.errorf(m, "%s: no resources.requests.%s", where, res)
		case !hasLim:
			c.errorf(m, "%s: no resources.limits.%s", where, res)
		case req.Sign() <= 0:
			c.errorf(m, "%s: resources.requests.%s is %s", where, res, req.String())
		case req.Cmp(lim) > 0:
			c.errorf(m, "%s: resources.requests.%s %s is above its limit %s", where, res, req.String(), lim.String())
		}
	}
}

// checkSecurity wants every container to run as non-root, with a read-only
// root file system, no privilege escalation and no capabilities.
func (c *checker) checkSecurity(m *manifest, where string, pod *corev1.PodSecurityContext, sc *corev1.SecurityContext) {
	nonRoot := pod != nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot
	if sc != nil && sc.RunAsNonRoot != nil {
		nonRoot = *sc.RunAsNonRoot
	}
	if !nonRoot {
		c.errorf(m, "%s: runAsNonRoot is not true", where)
	}
	if pod != nil && pod.RunAsUser != nil && *pod.RunAsUser == 0 || sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		c.errorf(m, "%s: runAsUser 0", where)
	}
	if sc == nil {
		c.errorf(m, "%s: no securityContext", where)
		return
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.errorf(m, "%s: allowPrivilegeEscalation is not false", where)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		c.errorf(m, "%s: readOnlyRootFilesystem is not true", where)
	}
	if sc.Privileged != nil && *sc.Privileged {
		c.errorf(m, "%s: privileged", where)
	}
	dropsAll := false
	if sc.Capabilities != nil {
		for _, cp := range sc.Capabilities.Drop {
			dropsAll = dropsAll || cp == "ALL"
		}
		if len(sc.Capabilities.Add) > 0 {
			c.errorf(m, "%s: adds capabilities %v", where, sc.Capabilities.Add)
		}
	}
	if !dropsAll {
		c.errorf(m, "%s: capabilities.drop does not hold ALL", where)
	}
}

// binaries are the trainmaster image's commands the manifests run: the
// sources whose fs.XxxVar(..., "flag", ...) calls define their flags, and
// the prefix of the environment variables that set them. The entry point,
// used when a container gives no command, is /master.
var binaries = map[string]struct {
	sources   []string
	envPrefix string
}{
	"/master":  {[]string{"cmd/master/main.go", "cmd/master/portflags.go", "internal/etcdconn/etcdconn.go"}, "MASTER_"},
	"/trainer": {[]string{"cmd/trainer/main.go", "cmd/trainer/lock.go", "internal/etcdconn/etcdconn.go"}, "TRAINER_"},
}

// flagDef is a flag definition in Go source: fs.StringVar(&o.addr, "addr",
// ...), fs.Var((*endpoints)(&o.Endpoints), "endpoints", ...) or
// fs.String("stragglers", ...); the flag's name is the call's first string.
var flagDef = regexp.MustCompile(`\bfs\.(?:String|Int|Int64|Uint|Uint64|Bool|Duration|Float64|Func|BoolFunc|Text)?(?:Var)?\([^"\n]*?"([a-z][a-z0-9-]*)"`)

// definedFlags returns the flags the sources of a binary define.
func (c *checker) definedFlags(sources []string) (map[string]bool, error) {
	flags := map[string]bool{}
	for _, rel := range sources {
		src, err := c.source(rel)
		if err != nil {
			return nil, err
		}
		for _, sub := range flagDef.FindAllSubmatch(src, -1) {
			flags[string(sub[1])] = true
		}
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("no flag definitions found in %v", sources)
	}
	return flags, nil
}

// checkFlags checks every flag a trainmaster container gives, in its args
// as -name=value and in its environment as MASTER_NAME or TRAINER_NAME,
// against the flags its binary defines, so that a renamed flag fails here.
func (c *checker) checkFlags(m *manifest, where string, ct *corev1.Container) {
	bin := "/master"
	if len(ct.Command) > 0 {
		bin = ct.Command[0]
	}
	b, ok := binaries[bin]
	if !ok {
		c.errorf(m, "%s runs %s, whose flags this test does not know: add it to binaries", where, bin)
		return
	}
	defined, err := c.definedFlags(b.sources)
	if err != nil {
		c.errorf(m, "%s: %v", where, err)
		return
	}
	for _, a := range ct.Args {
		if !strings.HasPrefix(a, "-") {
			c.errorf(m, "%s: argument %q: write flags as -name=value, one an argument", where, a)
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !defined[name] {
			c.errorf(m, "%s: %s has no flag -%s (flags defined in %v)", where, bin, name, b.sources)
		}
	}
	for _, e := range ct.Env {
		if rest, ok := strings.CutPrefix(e.Name, b.envPrefix); ok {
			name := strings.ReplaceAll(strings.ToLower(rest), "_", "-")
			if !defined[name] {
				c.errorf(m, "%s: env %s sets -%s, which %s does not have", where, e.Name, name, bin)
			}
		}
	}
}

func (c *checker) checkService(m *manifest, s *corev1.Service) {
	if len(s.Spec.Selector) == 0 {
		c.errorf(m, "spec.selector is missing")
		return
	}
	ws := c.matching(labels.SelectorFromSet(s.Spec.Selector))
	if len(ws) == 0 {
		c.errorf(m, "spec.selector %v selects no workload's pods", s.Spec.Selector)
		return
	}
	if len(s.Spec.Ports) == 0 {
		c.errorf(m, "no ports")
	}
	for _, p := range s.Spec.Ports {
		if len(s.Spec.Ports) > 1 && p.Name == "" {
			c.errorf(m, "port %d has no name (needed with several ports)", p.Port)
		}
		if p.Port < 1 || p.Port > 65535 {
			c.errorf(m, "port %d", p.Port)
		}
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		for _, w := range ws {
			found := false
			for i := range w.template.Spec.Containers {
				found = found || containerPort(&w.template.Spec.Containers[i], target) != 0
			}
			if !found {
				c.errorf(m, "port %s: targetPort %s is not declared by a container of %s", p.Name, target.String(), w.m)
			}
		}
	}
}

func (c *checker) checkPDB(m *manifest, p *policyv1.PodDisruptionBudget) {
	if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
		c.errorf(m, "give exactly one of minAvailable and maxUnavailable")
	}
	sel := c.selectorOf(m, "spec.selector", p.Spec.Selector)
	if sel == nil {
		return
	}
	ws := c.matching(sel)
	if len(ws) == 0 {
		c.errorf(m, "spec.selector %s selects no workload's pods", sel)
	}
	for _, w := range ws {
		if p.Spec.MinAvailable != nil && p.Spec.MinAvailable.Type == intstr.Int && w.replicas != nil && p.Spec.MinAvailable.IntVal >= *w.replicas {
			c.errorf(m, "minAvailable %d of %s's %d replicas allows no disruption: drains block", p.Spec.MinAvailable.IntVal, w.m, *w.replicas)
		}
	}
}

func (c *checker) checkNetworkPolicy(m *manifest, np *networkingv1.NetworkPolicy) {
	sel := c.selectorOf(m, "spec.podSelector", &np.Spec.PodSelector)
	if sel == nil {
		return
	}
	ws := c.matching(sel)
	if len(ws) == 0 {
		c.errorf(m, "spec.podSelector %s selects no workload's pods", sel)
	}
	for i, rule := range np.Spec.Ingress {
		for _, peer := range rule.From {
			if peer.PodSelector != nil && peer.NamespaceSelector == nil {
				if s := c.selectorOf(m, fmt.Sprintf("ingress[%d] podSelector", i), peer.PodSelector); s != nil && len(c.matching(s)) == 0 {
					c.errorf(m, "ingress[%d]: podSelector %s selects no workload's pods", i, s)
				}
			}
		}
		for _, p := range rule.Ports {
			if p.Port == nil {
				continue
			}
			for _, w := range ws {
				found := false
				for j := range w.template.Spec.Containers {
					found = found || containerPort(&w.template.Spec.Containers[j], *p.Port) != 0
				}
				if !found {
					c.errorf(m, "ingress[%d]: port %s is not declared by a container of %s", i, p.Port.String(), w.m)
				}
			}
		}
	}
}

func (c *checker) checkKustomization(m *manifest, k *kustomization) {
	if len(k.Resources) == 0 {
		c.errorf(m, "no resources")
	}
	for _, r := range k.Resources {
		switch {
		case strings.Contains(r, ".example."):
			c.errorf(m, "resource %s is an example with placeholders: never apply it", r)
		case c.files[r] == nil:
			c.errorf(m, "resource %s: no such manifest in this directory", r)
		}
	}
	for _, img := range k.Images {
		found := false
		for _, w := range c.workloads {
			for _, ct := range w.template.Spec.Containers {
				found = found || imageName(ct.Image) == img.Name
			}
		}
		if !found {
			c.errorf(m, "images: no container runs %q", img.Name)
		}
		if img.NewTag == "" && img.Digest == "" {
			c.errorf(m, "images: %s without newTag or digest", img.Name)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// readManifests reads the *.yaml files of this directory.
func readManifests(t *testing.T) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yml, _ := filepath.Glob("*.yml")
	names = append(names, yml...)
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	if len(files) == 0 {
		t.Fatal("no *.yaml files here")
	}
	return files
}

// repoSource reads a file of the repository.
func repoSource(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
}

func TestManifests(t *testing.T) {
	files := readManifests(t)
	for _, err := range check(files, repoSource) {
		t.Error(err)
	}
	ms, _ := decode(files)
	t.Logf("%d files, %d objects", len(files), len(ms))
}

// TestBrokenCopiesFail breaks a copy of the manifests (or of a flag
// source) in one place per case and wants check to say so: each check
// above fails when it should.
func TestBrokenCopiesFail(t *testing.T) {
	files := readManifests(t)
	cases := []struct {
		name      string
		file      string // a manifest, or a repository file with source set
		source    bool
		old, new  string
		wantError string
	}{
		// What the types decide.
		{"an unknown field", "master.yaml", false, "  revisionHistoryLimit: 5\n", "  revisionHistoryLimit: 5\n  replicaCount: 2\n", `unknown field "replicaCount"`},
		{"an unknown field in a container", "trainer-job.yaml", false, "          imagePullPolicy: IfNotPresent\n", "          imagePullPolicy: IfNotPresent\n          pullPolicy: Always\n", `unknown field "pullPolicy"`},
		{"a wrong type", "master.yaml", false, "  replicas: 2\n", "  replicas: two\n", "cannot unmarshal string"},
		{"a number as a string", "etcd.yaml", false, "  replicas: 3\n", "  replicas: \"3\"\n", "cannot unmarshal string"},
		{"a field in the wrong case", "master.yaml", false, "  replicas: 2\n", "  Replicas: 2\n", `unknown field "spec.Replicas"`},
		{"a duplicate key", "master.yaml", false, "  replicas: 2\n", "  replicas: 2\n  replicas: 3\n", "YAML"},
		{"a quantity that is none", "master.yaml", false, "memory: 512Mi", "memory: lots", "quantities must match"},
		{"an unknown kind", "etcd.yaml", false, "kind: PodDisruptionBudget", "kind: DisruptionBudget", "unknown kind"},
		{"a retired apiVersion", "etcd.yaml", false, "apiVersion: policy/v1\n", "apiVersion: policy/v1beta1\n", "unknown kind"},
		{"a Kustomization with an unknown field", "kustomization.yaml", false, "images:", "imagez:", `unknown field "imagez"`},
		// Required fields.
		{"no metadata.name", "dataset.yaml", false, "  name: trainmaster-dataset\n", "", "metadata.name is missing"},
		{"a container without image", "trainer-job.yaml", false, "          image: trainmaster:latest\n", "", "has no image"},
		{"an image without tag", "etcd.yaml", false, "image: gcr.io/etcd-development/etcd:v3.6.6", "image: gcr.io/etcd-development/etcd", "has no tag"},
		{"no replicas", "master.yaml", false, "  replicas: 2\n", "", "spec.replicas is not set"},
		{"a claim without size", "dataset.yaml", false, "      storage: 10Gi\n", "", "no resources.requests.storage"},
		{"a TLS Secret without its key", "secrets.example.yaml", false, "  tls.key: REPLACE with its PEM private key\n", "", "needs the key tls.key"},
		// References.
		{"a mount of an undeclared volume", "master.yaml", false, "            - name: token\n              mountPath", "            - name: tokens\n              mountPath", `mounts volume "tokens", which the pod does not declare`},
		{"a volume nobody mounts", "master.yaml", false, "            - name: token\n              mountPath", "            - name: tokens\n              mountPath", `volume "token" is mounted by no container`},
		{"a selector that misses the template", "master.yaml", false, "      app.kubernetes.io/component: master\n  template:", "      app.kubernetes.io/component: masters\n  template:", "does not match the template's labels"},
		{"a probe on an undeclared port", "master.yaml", false, "              path: /readyz\n              port: http", "              path: /readyz\n              port: status", "port status is not a port the container declares"},
		{"a probe on an undeclared port number", "etcd.yaml", false, "              path: /livez\n              port: metrics", "              path: /livez\n              port: 2382", "port 2382 is not a port the container declares"},
		{"a missing Secret", "master.yaml", false, "secretName: trainmaster-token", "secretName: trainmaster-tokens", `Secret "trainmaster-tokens" is not among the manifests`},
		{"a file the Secret does not hold", "master.yaml", false, "-token-file=/etc/trainmaster/token/token", "-token-file=/etc/trainmaster/token/secret", `has no key "secret"`},
		{"an env file the Secret does not hold", "trainer-job.yaml", false, "value: /etc/trainmaster/token/token", "value: /etc/trainmaster/token/tok", `has no key "tok"`},
		{"a missing claim", "trainer-job.yaml", false, "claimName: trainmaster-dataset", "claimName: dataset", `PersistentVolumeClaim "dataset" is not among the manifests`},
		{"an undefined $(VAR)", "master.yaml", false, "value: $(POD_IP):8080", "value: $(POD_ADDR):8080", "refers to $(POD_ADDR)"},
		{"a $(VAR) in args the env lacks", "etcd.yaml", false, "--name=$(POD_NAME)", "--name=$(HOSTNAME)", "refers to $(HOSTNAME)"},
		{"a Service that selects nothing", "master.yaml", false, "    app.kubernetes.io/component: master\n  ports:", "    app.kubernetes.io/component: status\n  ports:", "selects no workload's pods"},
		{"a Service on an undeclared port", "master.yaml", false, "      targetPort: http\n", "      targetPort: metrics\n", "targetPort metrics is not declared"},
		{"a StatefulSet without its Service", "etcd.yaml", false, "  serviceName: etcd\n", "  serviceName: etcd-peers\n", `spec.serviceName "etcd-peers": no such Service`},
		{"a budget that selects nothing", "etcd.yaml", false, "  minAvailable: 2\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: etcd", "  minAvailable: 2\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: etcd-member", "selects no workload's pods"},
		{"a budget that allows nothing", "etcd.yaml", false, "minAvailable: 2", "minAvailable: 3", "allows no disruption"},
		{"a NetworkPolicy on an undeclared port", "etcd.yaml", false, "        - port: peer\n", "        - port: raft\n", "port raft is not declared"},
		{"a Secret readable by others", "master.yaml", false, "            defaultMode: 0440\n", "            defaultMode: 0644\n", "set defaultMode to 0400 or 0440"},
		{"a Secret's mode in decimal", "trainer-job.yaml", false, "            defaultMode: 0440\n", "            defaultMode: 440\n", "(0670)"},
		{"a Job that restarts for ever", "trainer-job.yaml", false, "restartPolicy: Never", "restartPolicy: Always", "restartPolicy Never or OnFailure"},
		{"the example Secrets in the Kustomization", "kustomization.yaml", false, "  - master.yaml\n", "  - master.yaml\n  - secrets.example.yaml\n", "is an example"},
		{"a Kustomization of a missing file", "kustomization.yaml", false, "  - dataset.yaml\n", "  - datasets.yaml\n", "no such manifest"},
		// Hardening and resources.
		{"a writable root file system", "master.yaml", false, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem is not true"},
		{"privilege escalation", "trainer-job.yaml", false, "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation is not false"},
		{"root", "etcd.yaml", false, "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot is not true"},
		{"capabilities kept", "master.yaml", false, "                - ALL\n", "                - NET_RAW\n", "capabilities.drop does not hold ALL"},
		{"no limits", "master.yaml", false, "            limits:\n              cpu: \"2\"\n              memory: 512Mi\n", "", "no resources.limits.cpu"},
		{"a request above its limit", "trainer-job.yaml", false, "              memory: 256Mi\n", "              memory: 1Gi\n", "above its limit"},
		// Flags.
		{"a flag the master does not have", "master.yaml", false, "-http-addr=:9090", "-http-address=:9090", "/master has no flag -http-address"},
		{"an env flag the master does not have", "master.yaml", false, "MASTER_HTTP_ADVERTISE", "MASTER_HTTP_ADVERTISED", "env MASTER_HTTP_ADVERTISED sets -http-advertised"},
		{"a flag the trainer does not have", "trainer-job.yaml", false, "-tls-server-name=trainmaster", "-server-name=trainmaster", "/trainer has no flag -server-name"},
		{"a flag's value apart", "trainer-job.yaml", false, "            - -namespace=/jobs/example\n", "            - -namespace\n            - /jobs/example\n", "write flags as -name=value"},
		{"a master flag renamed in the source", "cmd/master/main.go", true, `"advertise"`, `"advertise-addr"`, "env MASTER_ADVERTISE sets -advertise, which /master does not have"},
		{"an etcd flag renamed in the source", "internal/etcdconn/etcdconn.go", true, `"endpoints"`, `"etcd-endpoints"`, "has no flag -endpoints"},
		{"a trainer flag renamed in the source", "cmd/trainer/lock.go", true, `"tls-ca"`, `"tls-ca-file"`, "/trainer has no flag -tls-ca"},
		// What the manifests promise (deployment_test.go).
		{"etcd apart from go.mod", "etcd.yaml", false, "etcd:v3.6.6", "etcd:v3.5.17", "the etcd server of go.mod"},
		{"the project's etcd apart from the image", "go.mod", true, "go.etcd.io/etcd/server/v3 v3.6.6", "go.etcd.io/etcd/server/v3 v3.6.7", "the etcd server of go.mod"},
		{"a member missing from initial-cluster", "etcd.yaml", false, ",etcd-2=http://etcd-2.etcd:2380", "", "--initial-cluster"},
		{"a master missing an etcd member", "master.yaml", false, ",http://etcd-2.etcd:2379", "", "-endpoints"},
		{"two etcd members", "etcd.yaml", false, "  replicas: 3\n", "  replicas: 2\n", "want 3 replicas"},
		{"one master", "master.yaml", false, "  replicas: 2\n", "  replicas: 1\n", "want 2 replicas"},
		{"readiness on /healthz", "master.yaml", false, "path: /readyz", "path: /healthz", "readiness probe on /readyz"},
		{"probes in plain HTTP with TLS on", "master.yaml", false, "              scheme: HTTPS\n", "", "speaks HTTPS"},
		{"a grace period shorter than the resign", "master.yaml", false, "terminationGracePeriodSeconds: 10", "terminationGracePeriodSeconds: 1", "terminationGracePeriodSeconds"},
		{"advertising another port", "master.yaml", false, "value: $(POD_IP):8080", "value: $(POD_IP):8081", "MASTER_ADVERTISE must be"},
		{"no token on the trainer port", "master.yaml", false, "            - -token-file=/etc/trainmaster/token/token\n", "", "no -token-file"},
		{"trainers of another job", "trainer-job.yaml", false, "-namespace=/jobs/example", "-namespace=/jobs/other", "the masters' is /jobs/example"},
		{"three trainers", "trainer-job.yaml", false, "  parallelism: 4\n", "  parallelism: 3\n", "want parallelism 4"},
		{"trainers by number", "trainer-job.yaml", false, "  completionMode: Indexed\n", "  completionMode: NonIndexed\n", "want completionMode Indexed"},
		{"trainers without the token", "trainer-job.yaml", false, "            - name: TRAINER_TOKEN_FILE\n              value: /etc/trainmaster/token/token\n", "", "no TRAINER_TOKEN_FILE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			broken := map[string][]byte{}
			for k, v := range files {
				broken[k] = v
			}
			source := repoSource
			var text []byte
			if tc.source {
				b, err := repoSource(tc.file)
				if err != nil {
					t.Fatal(err)
				}
				text = b
			} else {
				text = files[tc.file]
			}
			if !bytes.Contains(text, []byte(tc.old)) {
				t.Fatalf("%s does not hold %q any more: update the case", tc.file, tc.old)
			}
			changed := bytes.Replace(text, []byte(tc.old), []byte(tc.new), 1)
			if tc.source {
				source = func(rel string) ([]byte, error) {
					if rel == tc.file {
						return changed, nil
					}
					return repoSource(rel)
				}
			} else {
				broken[tc.file] = changed
			}
			errs := check(broken, source)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.wantError) {
					t.Logf("fails as it should: %v", err)
					return
				}
			}
			t.Errorf("no error holds %q; got %d:", tc.wantError, len(errs))
			for _, err := range errs {
				t.Log(err)
			}
		})
	}
}
