package dev.postbox.admin;

import jakarta.ws.rs.NameBinding;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks resources for the operator only: {@link AdminGuard} lets through only callers in the role
 * {@code postbox-admin}, and {@link BrowserGuard} refuses cross-site changes and framing. The admin
 * API and the console carry it; an application may put it on its own operator resources.
 */
@NameBinding
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
public @interface AdminOnly {}
