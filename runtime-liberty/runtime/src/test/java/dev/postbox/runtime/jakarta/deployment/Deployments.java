package dev.postbox.runtime.jakarta.deployment;

import dev.postbox.runtime.jakarta.deployment.app.Orders;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokers;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.stream.Stream;
import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.asset.EmptyAsset;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/**
 * Builds the micro-deployments on the test client, and prepares their databases. Every WAR holds
 * the runtime jar with its dependencies, one adapter's jars and the application's MicroProfile
 * Config; {@link #orders} adds the small application of {@link DeploymentContract}. A resource
 * reference {@code jdbc/it} names the deployment's data source for application code.
 */
public final class Deployments {

  private static final Path JARS = Path.of(System.getProperty("runtime.deploymentJars"));

  private Deployments() {}

  /**
   * @param name the archive's name, and so its context root
   * @param adapter the adapter's name: the folder of its jars under target/deployment-jars
   * @param dataSource the server's data source (src/test/liberty/arquillian/server.xml)
   * @param config the application's MicroProfile Config, besides the data source
   */
  public static WebArchive war(
      String name, String adapter, String dataSource, Map<String, String> config) {
    WebArchive war =
        ShrinkWrap.create(WebArchive.class, name + ".war")
            .addAsWebInfResource(EmptyAsset.INSTANCE, "beans.xml")
            .setWebXML(new StringAsset(webXml(dataSource)))
            .addAsResource(
                new StringAsset(properties(dataSource, config)),
                "META-INF/microprofile-config.properties")
            .addAsLibrary(
                Path.of(System.getProperty("runtime.jar")).toFile(), "postbox-runtime.jar");
    for (String folder : new String[] {"runtime", "testing", adapter}) {
      try (Stream<Path> jars = Files.list(JARS.resolve(folder))) {
        jars.forEach(jar -> war.addAsLibrary(jar.toFile(), jar.getFileName().toString()));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return war;
  }

  /** {@link #war} with the order application and the in-container test class. */
  static WebArchive orders(
      String name,
      String adapter,
      String dataSource,
      Map<String, String> config,
      Class<? extends DeploymentContract> test) {
    return war(name, adapter, dataSource, config)
        .addPackage(Orders.class.getPackage())
        .addClasses(DeploymentContract.class, test)
        .addAsResource(new StringAsset(persistenceXml(dataSource)), "META-INF/persistence.xml");
  }

  /**
   * {@link #orders} on a registered test broker (the JVM's shared one) with a destination of its
   * own, and the adapter's jars. The broker's own deduplication is off ({@link
   * TestBroker#republisherConfig()}): the contract's republished copy must reach the inbox.
   *
   * @param broker a registered test broker's name
   */
  static WebArchive ordersOn(
      String broker, String name, String dataSource, Class<? extends DeploymentContract> test) {
    TestBroker b = TestBrokers.named(broker).shared();
    String destination = name + "-" + UUID.randomUUID() + b.provider().destinationSuffix();
    b.createDestination(destination, 4);
    Map<String, String> config = new HashMap<>();
    b.republisherConfig().forEach((k, v) -> config.put("postbox.broker." + k, v));
    config.put("postbox.broker", b.provider().adapter());
    config.put("deployment.topic", destination);
    return orders(name, b.provider().adapter(), dataSource, config, test);
  }

  /** The in-container tests' server log, for what a test must see logged. */
  public static String serverLog() {
    try {
      return Files.readString(
          Path.of(System.getProperty("liberty.wlp"), "usr/servers/arquillian/logs/messages.log"));
    } catch (IOException e) {
      return "(no messages.log: " + e + ")";
    }
  }

  /**
   * Drops and creates a PostgreSQL schema.
   *
   * @return the schema, for the test's own statements
   */
  public static TestSchema freshPostgresSchema(String schema) {
    execute(
        "jdbc:postgresql://127.0.0.1:5432/test?user=postgres",
        "DROP SCHEMA IF EXISTS " + schema + " CASCADE",
        "CREATE SCHEMA " + schema);
    return new TestSchema(
        "jdbc:postgresql://127.0.0.1:5432/test?user=postgres&currentSchema=" + schema);
  }

  /** A deployment's schema, seen from the test client. */
  public record TestSchema(String url) {

    public void execute(String sql) {
      Deployments.execute(url, sql);
    }

    public long count(String sql) {
      try (Connection c = DriverManager.getConnection(url);
          Statement s = c.createStatement();
          java.sql.ResultSet rs = s.executeQuery(sql)) {
        rs.next();
        return rs.getLong(1);
      } catch (SQLException e) {
        throw new IllegalStateException(sql + ": " + e, e);
      }
    }
  }

  /** Drops and creates a MariaDB database. */
  static void freshMariaDbDatabase(String database) {
    execute(
        "jdbc:mariadb://127.0.0.1:3306/?user=root&password=",
        "DROP DATABASE IF EXISTS " + database,
        "CREATE DATABASE " + database);
  }

  private static void execute(String url, String... statements) {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot prepare the deployment's database: " + e, e);
    }
  }

  private static String properties(String dataSource, Map<String, String> config) {
    Map<String, String> all = new TreeMap<>(config);
    all.put("postbox.datasource", dataSource);
    // Fast retries, so a poison event reaches the dead letters quickly.
    all.putIfAbsent("postbox.inbox.max-attempts", "2");
    all.putIfAbsent("postbox.inbox.initial-delay", "100ms");
    all.putIfAbsent("postbox.inbox.max-delay", "200ms");
    StringBuilder out = new StringBuilder();
    all.forEach((k, v) -> out.append(k).append('=').append(v).append('\n'));
    return out.toString();
  }

  private static String webXml(String dataSource) {
    return """
        <?xml version="1.0" encoding="UTF-8"?>
        <web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
          <resource-ref>
            <res-ref-name>jdbc/it</res-ref-name>
            <res-type>javax.sql.DataSource</res-type>
            <lookup-name>%s</lookup-name>
          </resource-ref>
        </web-app>
        """
        .formatted(dataSource);
  }

  private static String persistenceXml(String dataSource) {
    return """
        <?xml version="1.0" encoding="UTF-8"?>
        <persistence xmlns="https://jakarta.ee/xml/ns/persistence" version="3.0">
          <persistence-unit name="deployment" transaction-type="JTA">
            <jta-data-source>%s</jta-data-source>
            <class>dev.postbox.runtime.jakarta.deployment.app.PlacedOrder</class>
            <class>dev.postbox.runtime.jakarta.deployment.app.Charge</class>
            <exclude-unlisted-classes>true</exclude-unlisted-classes>
            <properties>
              <property name="jakarta.persistence.schema-generation.database.action" value="create"/>
            </properties>
          </persistence-unit>
        </persistence>
        """
        .formatted(dataSource);
  }
}
