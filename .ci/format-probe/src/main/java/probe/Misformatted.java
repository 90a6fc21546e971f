package probe;

public class Misformatted {
  public int  twice( int x ){ return x*2; }
}
