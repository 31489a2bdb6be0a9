package schemas
import ("testing";"time")
func TestCompileCost(t *testing.T) {
	start := time.Now()
	compile("session.create.params")
	t.Log("first (session.create.params):", time.Since(start))
	start = time.Now()
	compile("session.prompt.params")
	t.Log("second:", time.Since(start))
	start = time.Now()
	n := 0
	for name := range theCatalog().paths { compile(name); n++ }
	t.Log("all", n, time.Since(start))
	start = time.Now()
	for range 1000 { ValidateParams("session.create", []byte(`{"cwd":"/w","tools":["read"],"save":true}`)) }
	t.Log("validate x1000:", time.Since(start))
}
