package dev.postbox.payments;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The answer to errors the servlet container raises itself, before the REST API runs (a missing or
 * wrong login on {@code /admin}, a missing role, a URI it cannot decode): the same JSON body {@code
 * {"error": "..."}} as every other 4xx, never the server's HTML page. {@code web.xml} sends those
 * statuses here; the status and its headers (such as {@code WWW-Authenticate}) stay as they were.
 */
@WebServlet(ContainerErrors.PATH)
public class ContainerErrors extends HttpServlet {

  static final String PATH = "/postbox-container-error";

  private static final long serialVersionUID = 1L;

  private static final Map<Integer, String> MESSAGES =
      Map.of(
          400, "the request could not be read (its URI or headers)",
          401, "log in: this needs a user with the role postbox-admin",
          403, "this needs the role postbox-admin",
          404, "not found",
          405, "method not allowed",
          413, "the request is too large",
          415, "unsupported media type",
          500, "internal error; the server log has the details");

  @Override
  protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    Object code = req.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
    int status = code instanceof Integer i ? i : resp.getStatus();
    resp.setStatus(status);
    resp.setContentType("application/json");
    resp.setCharacterEncoding(StandardCharsets.UTF_8.name());
    String message = MESSAGES.getOrDefault(status, "error " + status);
    resp.getWriter().write(Json.write(Map.of("error", message)));
  }
}
