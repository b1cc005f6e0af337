package trainerport_test

import (
	"fmt"
	"net"
	"net/rpc"

	"github.com/trainmaster/master/internal/trainerport"
)

// Greeter is a service: its methods have net/rpc's shape.
type Greeter struct{}

func (Greeter) Hello(name string, reply *string) error {
	*reply = "hello, " + name
	return nil
}

// A service registered on a port with a token: a client authenticates on
// the service's name, then calls it.
func Example() {
	srv, err := trainerport.NewServer(trainerport.Config{Token: "s3cret", Log: quietLog()})
	if err != nil {
		panic(err)
	}
	if err := srv.Register("Greeter", Greeter{}, nil); err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Close()

	c, err := rpc.Dial("tcp", lis.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	var reply string
	fmt.Println(c.Call("Greeter.Hello", "trainer", &reply))
	c, err = rpc.Dial("tcp", lis.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.Call("Greeter.Authenticate", "s3cret", new(int)); err != nil {
		panic(err)
	}
	if err := c.Call("Greeter.Hello", "trainer", &reply); err != nil {
		panic(err)
	}
	fmt.Println(reply)
	// Output:
	// master: Greeter.Hello called before Greeter.Authenticate on a master that requires a token: not authenticated
	// hello, trainer
}
