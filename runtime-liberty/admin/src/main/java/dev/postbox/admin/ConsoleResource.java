package dev.postbox.admin;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.core.Response;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.util.Map;

/**
 * The console: plain HTML, CSS and JavaScript (no libraries) served from the classpath, behind the
 * admin role like the API it reads. Only the listed files are served. The page reads the API at
 * {@code ../admin/}, so it works under any context root.
 */
@AdminOnly
@Path("/console")
@ApplicationScoped
@org.eclipse.microprofile.openapi.annotations.tags.Tag(name = "operator")
@org.eclipse.microprofile.openapi.annotations.security.SecurityRequirement(
    name = AdminResource.SECURITY)
public class ConsoleResource {

  private static final Map<String, String> FILES =
      Map.of(
          "index.html", "text/html; charset=utf-8",
          "console.js", "text/javascript; charset=utf-8",
          "console.css", "text/css; charset=utf-8");

  @GET
  public Response root() {
    return Response.seeOther(URI.create("console/index.html")).build(); // against the app's base
  }

  @GET
  @Path("/{file}")
  public Response file(@PathParam("file") String file) throws IOException {
    String type = FILES.get(file);
    if (type == null) {
      throw new NotFoundException();
    }
    try (InputStream in =
        ConsoleResource.class.getClassLoader().getResourceAsStream("console/" + file)) {
      if (in == null) {
        throw new NotFoundException();
      }
      return Response.ok(in.readAllBytes(), type).header("Cache-Control", "no-cache").build();
    }
  }
}
