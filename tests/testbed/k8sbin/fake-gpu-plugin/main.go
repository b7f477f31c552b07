// SPDX-License-Identifier: Apache-2.0

// Command fake-gpu-plugin is a Kubernetes device plugin without devices behind it, for the
// testbed's real node (scripts/lib/testbed/realnode.sh): it advertises -count healthy devices
// of -resource to the kubelet, as NVIDIA's device plugin advertises GPUs, and answers
// Allocate with NVIDIA_VISIBLE_DEVICES naming the devices the kubelet chose. The kubelet's own
// device manager does the accounting, so a pod asking for more than is left is refused by the
// real kubelet (UnexpectedAdmissionError).
//
// The kubelet forgets its plugins when it restarts (it removes every socket of the
// device-plugin directory): the plugin serves again and re-registers whenever its socket is
// gone, and exits on SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once and holds the stream: they never change.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (p *plugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, c := range r.ContainerRequests {
		log.Printf("allocate %v", c.DevicesIds)
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIds, ",")},
		})
	}
	return out, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// serve listens on socket, registers with the kubelet and returns the server once the
// kubelet has accepted the registration.
func serve(p *plugin, dir, socket, resource string) (*grpc.Server, error) {
	path := filepath.Join(dir, socket)
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: socket, ResourceName: resource,
		Options: &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("register with the kubelet: %w", err)
	}
	return srv, nil
}

func main() {
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin directory")
	resource := flag.String("resource", "nvidia.com/gpu", "extended resource to advertise")
	count := flag.Int("count", 8, "devices to advertise")
	socket := flag.String("socket", "skb-fake-gpu.sock", "this plugin's socket in -dir")
	flag.Parse()
	p := &plugin{}
	for i := 0; i < *count; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("gpu-%d", i), Health: pluginapi.Healthy})
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var srv *grpc.Server
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(*dir, *socket)); srv == nil || err != nil {
			if srv != nil {
				log.Printf("socket gone (kubelet restarted?): serving again")
				srv.Stop()
				srv = nil
			}
			s, err := serve(p, *dir, *socket, *resource)
			if err != nil {
				log.Printf("not registered yet: %v", err)
			} else {
				log.Printf("registered %d x %s at %s", *count, *resource, *socket)
				srv = s
			}
		}
		select {
		case <-stop:
			if srv != nil {
				srv.Stop()
			}
			_ = os.Remove(filepath.Join(*dir, *socket))
			return
		case <-tick.C:
		}
	}
}
