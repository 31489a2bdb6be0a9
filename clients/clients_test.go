// Package clients_test runs the reference clients' own test suites
// (clients/python, clients/typescript) against a freshly built e, so that
// go test ./... covers them: python3 -m unittest, and tsc --strict then
// node --test; then client-side conformance (e-conformance client) on each;
// and each installed into a fresh project as a user installs it (pip, npm)
// running a turn. Each skips, saying why, when its interpreter is missing;
// .ci/run installs tsc from npm.
package clients_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// conform runs client-side conformance on a client command, in dir.
func conform(t *testing.T, dir, command string) {
	t.Helper()
	run(t, dir, nil, build(t, "../cmd/e-conformance"), "client", "--timeout-scale", "2", "--command", command)
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (bash .ci/run installs what CI needs)", tool)
		}
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s %v:\n%s", name, args, out)
}

func TestPython(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	run(t, "python", []string{"E_BIN=" + build(t, "../cmd/e"), "PYTHONDONTWRITEBYTECODE=1"}, "python3", "-m", "unittest", "-v")
	conform(t, "python", "env PYTHONDONTWRITEBYTECODE=1 python3 -m e_client.task")
}

func TestTypeScript(t *testing.T) {
	t.Parallel()
	need(t, "node", "tsc")
	out := t.TempDir()
	args := []string{"-p", ".", "--outDir", out}
	// tsc from .ci/run's npm cache finds Node's types beside itself.
	if tsc, err := exec.LookPath("tsc"); err == nil {
		if types := filepath.Join(filepath.Dir(tsc), "..", "@types"); isDir(types) {
			args = append(args, "--typeRoots", types)
		}
	}
	run(t, "typescript", nil, "tsc", args...)
	pkg, _ := filepath.Abs("typescript")
	run(t, "typescript", []string{"E_BIN=" + build(t, "../cmd/e"), "E_TS_PKG=" + pkg}, "node", "--test", filepath.Join(out, "test"))
	conform(t, "typescript", "node "+filepath.Join(out, "src", "task.js"))
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// TestPythonInstall installs clients/python with pip into a fresh venv, as
// a user would (pip install ./clients/python), and runs a turn with the
// threaded and the asyncio client from another directory. No package index
// is reachable here: the build backend is the interpreter's own setuptools
// (--no-build-isolation), which is why it looks for a python3 that has it
// (Debian's python3-setuptools and python3-wheel).
func TestPythonInstall(t *testing.T) {
	t.Parallel()
	py := pythonWithSetuptools(t)
	tmp := t.TempDir()
	// pip builds in the source tree (build/, *.egg-info): build a copy.
	src := filepath.Join(tmp, "src")
	copyTree(t, "python", src, "tests")
	venv := filepath.Join(tmp, "venv")
	run(t, tmp, nil, py, "-m", "venv", "--system-site-packages", venv)
	run(t, tmp, nil, filepath.Join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index", src)
	proj := filepath.Join(tmp, "project")
	os.Mkdir(proj, 0o755)
	script := `import asyncio, importlib.resources, e_client, e_client.aio
assert importlib.resources.files("e_client").joinpath("py.typed").is_file(), "no py.typed"
with e_client.Client() as e:
    e.hello()
    print("threads:", e.create_session().run("/text hello from pip")["final_output"])
async def main():
    async with e_client.aio.AsyncClient() as e:
        await e.hello()
        s = await e.create_session()
        print("asyncio:", (await s.run("/text hello from asyncio"))["final_output"])
asyncio.run(main())
`
	out := output(t, proj, []string{"E_BIN=" + build(t, "../cmd/e"), "E_HOME=" + t.TempDir(), "PYTHONDONTWRITEBYTECODE=1"},
		filepath.Join(venv, "bin", "python"), "-c", script)
	if want := "threads: hello from pip\nasyncio: hello from asyncio\n"; out != want {
		t.Errorf("installed client printed %q, want %q", out, want)
	}
}

// TestTypeScriptInstall installs clients/typescript into fresh projects,
// from its folder (npm runs prepare, which builds dist) and from the
// tarball npm pack makes, and compiles and runs the README's example
// (example/hello.ts, which imports the package by its name) in each.
func TestTypeScriptInstall(t *testing.T) {
	t.Parallel()
	need(t, "node", "npm", "tsc")
	tsc, _ := exec.LookPath("tsc")
	// The package's devDependencies (typescript, @types/node): those of
	// .ci/run's npm cache, beside tsc; no registry is needed.
	modules := filepath.Join(filepath.Dir(tsc), "..")
	if !isDir(filepath.Join(modules, "@types", "node")) {
		t.Skip("tsc is not .ci/run's (no @types/node beside it)")
	}
	tmp := t.TempDir()
	pkg := filepath.Join(tmp, "client")
	copyTree(t, "typescript", pkg, "dist", "node_modules")
	if err := os.Symlink(modules, filepath.Join(pkg, "node_modules")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "bin")
	os.Mkdir(bin, 0o755)
	if err := os.Symlink(build(t, "../cmd/e"), filepath.Join(bin, "e")); err != nil {
		t.Fatal(err)
	}
	npm := []string{"--offline", "--no-audit", "--no-fund", "--loglevel=error"}
	fromPath := project(t, tmp, "from-path")
	run(t, fromPath, nil, "npm", append([]string{"install"}, append(npm, pkg)...)...)
	// dist is there now (prepare built it): pack without building again.
	run(t, pkg, nil, "npm", "pack", "--ignore-scripts", "--pack-destination", tmp)
	fromTarball := project(t, tmp, "from-tarball")
	run(t, fromTarball, nil, "npm", append([]string{"install"}, append(npm, filepath.Join(tmp, "e-agent-client-0.1.0.tgz"))...)...)
	example, err := os.ReadFile("typescript/example/hello.ts")
	if err != nil {
		t.Fatal(err)
	}
	for _, proj := range []string{fromPath, fromTarball} {
		os.WriteFile(filepath.Join(proj, "hello.ts"), example, 0o644)
		run(t, proj, nil, "tsc", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
			"--types", "node", "--typeRoots", filepath.Join(modules, "@types"), "--outDir", "out", "hello.ts")
		out := output(t, proj, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "E_HOME=" + t.TempDir()},
			"node", filepath.Join("out", "hello.js"))
		if !strings.HasSuffix(out, "\nhello from typescript\n") {
			t.Errorf("%s: the example printed %q, want its final line \"hello from typescript\"", filepath.Base(proj), out)
		}
	}
}

// project makes an empty npm project.
func project(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	os.Mkdir(p, 0o755)
	if err := os.WriteFile(filepath.Join(p, "package.json"), []byte(`{"name":"`+name+`","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// pythonWithSetuptools finds a python3 whose setuptools can build a wheel
// offline (/usr/bin/python3 first: a pyenv python3 on PATH may have none).
func pythonWithSetuptools(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import setuptools, wheel, venv, ensurepip").Run() == nil {
			return py
		}
	}
	t.Skip("no python3 with setuptools, wheel and venv (apt-get install python3-setuptools python3-wheel python3-venv)")
	return ""
}

// output runs a command and returns its stdout, failing the test on error.
func output(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out, stderr.String())
	}
	return string(out)
}

// copyTree copies the regular files of src to dst, leaving out the
// top-level entries named in skip.
func copyTree(t *testing.T, src, dst string, skip ...string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if top, _, _ := strings.Cut(rel, string(filepath.Separator)); slices.Contains(skip, top) || d.Name() == "__pycache__" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
