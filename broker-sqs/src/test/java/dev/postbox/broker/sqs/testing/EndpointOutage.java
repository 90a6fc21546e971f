package dev.postbox.broker.sqs.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP forwarder in front of a server, which can take the endpoint away for a while: an outage of
 * the network path, not of the server. Every open connection is reset and new ones are refused
 * until the endpoint is back on the same port; the server behind it keeps its state. That is what
 * an SQS outage looks like to a client (SQS itself never restarts and never forgets a message).
 */
final class EndpointOutage implements AutoCloseable {

  private final int target;
  private final int port;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile ServerSocket listening;

  EndpointOutage(int target) {
    this.target = target;
    this.listening = listen(0);
    this.port = listening.getLocalPort();
    accept(listening);
  }

  /** The port clients use. */
  int port() {
    return port;
  }

  /** Takes the endpoint away: open connections are reset, new ones refused. */
  synchronized void down() {
    closeQuietly(listening);
    for (Socket s : open) {
      closeQuietly(s); // reset: in-flight requests fail as they would on a dropped network
    }
  }

  /** Brings the endpoint back on the same port. */
  synchronized void up() {
    if (listening.isClosed()) {
      listening = listen(port);
      accept(listening);
    }
  }

  private ServerSocket listen(int on) {
    try {
      ServerSocket s = new ServerSocket();
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), on));
      return s;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void accept(ServerSocket server) {
    Thread t =
        new Thread(
            () -> {
              while (!server.isClosed()) {
                try {
                  Socket client = server.accept();
                  Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
                  client.setTcpNoDelay(true);
                  upstream.setTcpNoDelay(true);
                  open.add(client);
                  open.add(upstream);
                  pipe(client, upstream);
                  pipe(upstream, client);
                } catch (IOException closedOrRefused) {
                  // the listening socket closed (an outage or close()), or the server refused
                }
              }
            },
            "sqs-endpoint-accept");
    t.setDaemon(true);
    t.start();
  }

  private void pipe(Socket from, Socket to) {
    Thread t =
        new Thread(
            () -> {
              byte[] buffer = new byte[16 * 1024];
              try (InputStream in = from.getInputStream();
                  OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                  out.write(buffer, 0, n);
                  out.flush();
                }
              } catch (IOException closed) {
                // either side went away
              } finally {
                closeQuietly(from);
                closeQuietly(to);
                open.remove(from);
                open.remove(to);
              }
            },
            "sqs-endpoint-pipe");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      if (c instanceof Socket s && !s.isClosed()) {
        s.setSoLinger(true, 0); // RST, not FIN: the peer sees a reset connection
      }
      c.close();
    } catch (Exception ignored) {
      // already closed
    }
  }

  @Override
  public void close() {
    closeQuietly(listening);
    for (Socket s : open) {
      closeQuietly(s);
    }
  }
}
