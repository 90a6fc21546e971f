package dev.postbox.admin.it.api;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;

/**
 * An embedding application whose JAX-RS root is {@code /api}: the admin resources live at {@code
 * /api/admin/...}, outside the web-fragment's URL patterns, so only the role check guards them.
 */
@ApplicationPath("/api")
public class ApiApplication extends Application {}
